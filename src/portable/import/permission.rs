//! Who may import: checked before a bundle is decrypted, so that a caller
//! who may change nothing costs the server no key derivation.

use crate::auth::Actor;
use crate::error::{ApiError, Result};
use crate::household::grants;

/// Who may import or dry-run a bundle at all, checked before it is
/// decrypted (its key derivation is the costly part): owners and
/// administrators, and members who manage someone (a live manage grant) or
/// hold inventory or location management. Anyone else could change none
/// of the household's people, medicines or locations (import rule 8 and
/// each collection's rule) and at most add new people, which the people
/// endpoint does for them; they are refused before the bundle costs the
/// server anything.
pub fn require_may_import(conn: &rusqlite::Connection, actor: &Actor) -> Result<()> {
    if actor.is_manager()
        || actor.can_manage_inventory()
        || actor.can_manage_locations()
        || grants::store::holds_manage_grant(conn, actor)?
    {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "importing a bundle needs manage access to a person of the household, or the inventory \
         or location management permission",
    ))
}

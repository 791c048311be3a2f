//! What a change of location membership does to the person it names.

use crate::auth::Actor;
use crate::db::WriteTx;
use crate::error::Result;
use crate::household::people::{self, store::PersonRow};

/// The person's `location_ids` changed.
pub(super) fn touch_person(conn: &WriteTx, actor: &Actor, mut person: PersonRow) -> Result<()> {
    people::touch(conn, actor, &mut person)
}

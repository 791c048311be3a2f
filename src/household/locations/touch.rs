//! What a change of location membership does to the person it names.

use crate::auth::Actor;
use crate::db::WriteTx;
use crate::db::change_feed::{self, Action, Change};
use crate::domain::record_type;
use crate::error::Result;
use crate::household::people::{self, store::PersonRow};

/// The person's `location_ids` changed: a new version (so a new ETag) and a
/// Person change-feed entry, in the caller's transaction.
pub(super) fn touch_person(conn: &WriteTx, actor: &Actor, mut person: PersonRow) -> Result<()> {
    person.lock_version += 1;
    person.updated_at = crate::domain::Timestamp::now();
    people::store::update(conn, &person)?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: record_type::PERSON,
            record_id: person.id,
            record_portable_id: &person.portable_id,
            action: Action::Update,
            person_id: Some(person.id),
        },
    )
}

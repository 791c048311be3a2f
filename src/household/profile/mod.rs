//! The signed-in member's own profile: the person linked to their membership
//! plus the preferences of their account, and that person's avatar.
//!
//! The date of birth lives on the person and changes through the people
//! rule (lock version, change feed); time zone, Gravatar and mobile
//! shortcuts live on the account. A PATCH saves both in one transaction.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use jiff::civil::Date;
use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor};
use crate::domain::{IfMatch, ResourceId, Timestamp};
use crate::error::{ApiError, Problems, Result};
use crate::household::people::{self, model::PersonAttributes, store::PersonRow};
use crate::household::store as household_store;

use crate::auth::accounts::{self, AccountPrefs};
use model::{Avatar, MAX_SHORTCUT_CHARS, MAX_SHORTCUTS, Profile, ProfileAttributes};

/// The largest avatar file accepted (the spec's limit: 5 MiB).
pub const MAX_AVATAR_BYTES: usize = 5 * 1024 * 1024;

/// The person linked to the caller's membership, if the caller currently has
/// at least `needed` access to them (404 without a linked person, 403 when
/// the access is too low).
pub fn linked_person(conn: &Connection, actor: &Actor, needed: AccessLevel) -> Result<PersonRow> {
    let person_id = actor.person_id.ok_or_else(|| {
        ApiError::NotFound(
            "no person is linked to your membership in this household, so you have no profile here; ask a household administrator to link one".into(),
        )
    })?;
    people::find_for(conn, actor, &ResourceId::Numeric(person_id), needed)
}

fn shape(conn: &Connection, actor: &Actor, person: PersonRow) -> Result<Profile> {
    let prefs = accounts::prefs(conn, actor.account_id)?;
    let avatar_at = store::avatar_updated_at(conn, person.id)?;
    let today = household_store::today(conn, actor.household_id)?;
    let age = person
        .date_of_birth
        .as_deref()
        .and_then(|d| d.parse::<Date>().ok())
        .map(|dob| people::age_on(dob, today));
    let has_avatar = avatar_at.is_some();
    let updated_at = [person.updated_at, prefs.updated_at]
        .into_iter()
        .chain(avatar_at)
        .max()
        .ok_or_else(|| ApiError::internal("a profile without a timestamp"))?;
    Ok(Profile {
        id: person.id.to_string(),
        portable_id: person.portable_id,
        name: person.name,
        email: prefs.email,
        date_of_birth: person.date_of_birth,
        age,
        time_zone: prefs.time_zone,
        gravatar_enabled: prefs.gravatar_enabled,
        mobile_shortcuts: prefs.mobile_shortcuts,
        has_avatar,
        updated_at,
    })
}

pub fn get(conn: &Connection, actor: &Actor) -> Result<Profile> {
    let person = linked_person(conn, actor, AccessLevel::View)?;
    shape(conn, actor, person)
}

/// Checks submitted attributes, collecting every problem before answering.
/// The people rule checks the date of birth again when it saves it.
fn validate(attrs: &ProfileAttributes, today: Date) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: String| problems.add(field, message);
    match &attrs.date_of_birth {
        Some(None) => add("date_of_birth", "must not be null".into()),
        Some(Some(dob)) if *dob > today => add("date_of_birth", "must not be in the future".into()),
        _ => {}
    }
    if let Some(Some(name)) = &attrs.time_zone
        && let Err(ApiError::Validation { errors: found, .. }) =
            crate::domain::canonical_time_zone(name)
    {
        for (field, messages) in found {
            for message in messages {
                add(&field, message);
            }
        }
    }
    if let Some(None) = attrs.gravatar_enabled {
        add("gravatar_enabled", "must not be null".into());
    }
    match &attrs.mobile_shortcuts {
        Some(None) => add("mobile_shortcuts", "must not be null".into()),
        Some(Some(shortcuts)) => {
            if shortcuts.len() > MAX_SHORTCUTS {
                add(
                    "mobile_shortcuts",
                    format!("must have at most {MAX_SHORTCUTS} entries"),
                );
            }
            if shortcuts.iter().any(|s| s.trim().is_empty()) {
                add("mobile_shortcuts", "entries must not be blank".into());
            }
            if shortcuts
                .iter()
                .any(|s| s.trim().chars().count() > MAX_SHORTCUT_CHARS)
            {
                add(
                    "mobile_shortcuts",
                    format!("entries must be at most {MAX_SHORTCUT_CHARS} characters"),
                );
            }
            let mut seen = std::collections::HashSet::new();
            if !shortcuts.iter().all(|s| seen.insert(s.trim())) {
                add("mobile_shortcuts", "must not repeat an entry".into());
            }
        }
        None => {}
    }
    problems.check("the profile's attributes are invalid")
}

/// Applies the account's part of `attrs`; true when anything changed.
fn apply_to_account(prefs: &mut AccountPrefs, attrs: &ProfileAttributes) -> bool {
    let before = (
        prefs.time_zone.clone(),
        prefs.gravatar_enabled,
        prefs.mobile_shortcuts.clone(),
    );
    if let Some(time_zone) = &attrs.time_zone {
        // Validation has passed, so every name has its canonical spelling.
        prefs.time_zone = time_zone
            .as_deref()
            .map(|name| crate::domain::canonical_time_zone(name).unwrap_or_default());
    }
    if let Some(Some(enabled)) = attrs.gravatar_enabled {
        prefs.gravatar_enabled = enabled;
    }
    if let Some(Some(shortcuts)) = &attrs.mobile_shortcuts {
        prefs.mobile_shortcuts = shortcuts.iter().map(|s| s.trim().to_string()).collect();
    }
    before
        != (
            prefs.time_zone.clone(),
            prefs.gravatar_enabled,
            prefs.mobile_shortcuts.clone(),
        )
}

/// Saves the account's preferences and the person's date of birth in the
/// caller's transaction: if any part fails, the caller rolls back all of it.
pub fn update(conn: &WriteTx, actor: &Actor, attrs: ProfileAttributes) -> Result<Profile> {
    let person = linked_person(conn, actor, AccessLevel::Manage)?;
    let today = household_store::today(conn, actor.household_id)?;
    validate(&attrs, today)?;

    let mut prefs = accounts::prefs(conn, actor.account_id)?;
    if apply_to_account(&mut prefs, &attrs) {
        prefs.updated_at = Timestamp::now();
        accounts::update_prefs(conn, &prefs)?;
    }

    if let Some(Some(dob)) = attrs.date_of_birth
        && person.date_of_birth.as_deref() != Some(dob.to_string().as_str())
    {
        // The people rule: re-checks access and the date, bumps the lock
        // version and appends the change-feed entry.
        people::update(
            conn,
            actor,
            &ResourceId::Numeric(person.id),
            &IfMatch(None),
            PersonAttributes {
                date_of_birth: Some(Some(dob)),
                ..PersonAttributes::default()
            },
        )?;
    }

    let person = linked_person(conn, actor, AccessLevel::View)?;
    shape(conn, actor, person)
}

/// The image type of an upload, decided by its first bytes only.
pub fn sniff_image(data: &[u8]) -> Option<&'static str> {
    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    if data.starts_with(PNG) {
        Some("image/png")
    } else if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if data.len() >= 12 && data.starts_with(b"RIFF") && &data[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Replaces the linked person's avatar. A refused upload leaves the stored
/// image as it was.
pub fn replace_avatar(conn: &WriteTx, actor: &Actor, data: Vec<u8>) -> Result<Profile> {
    let person = linked_person(conn, actor, AccessLevel::Manage)?;
    if data.len() > MAX_AVATAR_BYTES {
        return Err(ApiError::PayloadTooLarge(MAX_AVATAR_BYTES));
    }
    let content_type = sniff_image(&data).ok_or_else(|| {
        ApiError::invalid(
            "avatar",
            "must be a PNG, JPEG or WebP image (recognised by its content)",
        )
    })?;
    let avatar = Avatar {
        content_type: content_type.to_string(),
        data,
    };
    store::upsert_avatar(conn, person.id, &avatar, &Timestamp::now())?;
    shape(conn, actor, person)
}

/// The linked person's avatar, after checking current view access.
pub fn avatar(conn: &Connection, actor: &Actor) -> Result<Avatar> {
    let person = linked_person(conn, actor, AccessLevel::View)?;
    store::avatar(conn, person.id)?.ok_or_else(|| ApiError::not_found("avatar"))
}

/// Removes the linked person's avatar; nothing to remove is not an error.
pub fn delete_avatar(conn: &WriteTx, actor: &Actor) -> Result<()> {
    let person = linked_person(conn, actor, AccessLevel::Manage)?;
    store::delete_avatar(conn, person.id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_recognised_by_content() {
        assert_eq!(
            sniff_image(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some("image/png")
        );
        assert_eq!(
            sniff_image(b"\xFF\xD8\xFF\xE0\0\x10JFIF"),
            Some("image/jpeg")
        );
        assert_eq!(sniff_image(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"RIFF\x24\0\0\0WAVEfmt "), None);
        assert_eq!(sniff_image(b"\x89PNG"), None);
        assert_eq!(sniff_image(b"hello, I am a text file"), None);
        assert_eq!(sniff_image(b""), None);
    }
}

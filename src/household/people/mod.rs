//! People of a household: the rules for reading, creating and changing them.

pub mod model;
pub mod routes;
pub mod store;

use jiff::civil::Date;
use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::db::WriteTx;
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, Page, ResourceId, Timestamp, etag};
use crate::error::{ApiError, Problems, Result};
use crate::household::grants::{self, Relationship};
use crate::household::store as household_store;

use model::{MAX_EMAIL, Person, PersonAttributes, PersonType};
use store::PersonRow;

pub const RECORD_TYPE: &str = crate::domain::record_type::PERSON;

/// Changing a person needs this access to them.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;
/// Adulthood starts on the 18th birthday in the household's time zone.
pub const ADULT_AGE: i64 = 18;

/// The one rule tying `person_type` and `has_capacity` to age (in the
/// household time zone), checked on create, on update and when the date of
/// birth changes, and the rule an importer's "capacity rules" apply:
/// a `minor` is under 18 and has no capacity; an `adult` is 18 or over and
/// has capacity; a `dependent_adult` is 18 or over and has none. Without a
/// date of birth only the type and capacity pairing is checked. `Err` holds
/// (field, message) for each disagreement.
pub fn check_capacity_rule(
    date_of_birth: Option<Date>,
    person_type: PersonType,
    has_capacity: bool,
    today: Date,
) -> std::result::Result<(), Vec<(&'static str, &'static str)>> {
    let mut problems = Vec::new();
    let adult = date_of_birth.map(|dob| age_on(dob, today) >= ADULT_AGE);
    match (person_type, adult) {
        (PersonType::Minor, Some(true)) => problems.push((
            "person_type",
            "must not be minor for a person aged 18 or over",
        )),
        (PersonType::Adult | PersonType::DependentAdult, Some(false)) => {
            problems.push(("person_type", "must be minor for a person under 18"))
        }
        _ => {}
    }
    let capacity = person_type == PersonType::Adult;
    if has_capacity != capacity && problems.is_empty() {
        problems.push((
            "has_capacity",
            if capacity {
                "must be true for an adult (a dependent_adult is an adult without capacity)"
            } else {
                "must be false for a minor or a dependent_adult"
            },
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The type and capacity a person takes from their age when not given.
fn default_type(
    date_of_birth: Option<Date>,
    has_capacity: Option<bool>,
    today: Date,
) -> PersonType {
    match date_of_birth {
        Some(dob) if age_on(dob, today) < ADULT_AGE => PersonType::Minor,
        _ if has_capacity == Some(false) => PersonType::DependentAdult,
        _ => PersonType::Adult,
    }
}

/// Age in whole years on `today`.
pub fn age_on(date_of_birth: Date, today: Date) -> i64 {
    let mut years = i64::from(today.year() - date_of_birth.year());
    if (today.month(), today.day()) < (date_of_birth.month(), date_of_birth.day()) {
        years -= 1;
    }
    years.max(0)
}

/// Shapes rows as API people: ages in the household's time zone, locations
/// and notification preference ids in one query each.
pub fn to_api(conn: &Connection, household_id: i64, rows: Vec<PersonRow>) -> Result<Vec<Person>> {
    let today = household_store::today(conn, household_id)?;
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut locations = store::locations_of(conn, &ids)?;
    let mut preferences = store::notification_preferences_of(conn, &ids)?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let (location_ids, location_portable_ids) = locations
                .remove(&row.id)
                .unwrap_or_default()
                .into_iter()
                .unzip();
            let (notification_preference_id, notification_preference_portable_id) =
                preferences.remove(&row.id).unzip();
            Person {
                age: row
                    .date_of_birth
                    .as_deref()
                    .and_then(|d| d.parse::<Date>().ok())
                    .map(|dob| age_on(dob, today)),
                id: row.id,
                portable_id: row.portable_id,
                updated_at: row.updated_at,
                name: row.name,
                email: row.email,
                date_of_birth: row.date_of_birth,
                person_type: row.person_type,
                has_capacity: row.has_capacity,
                location_ids,
                location_portable_ids,
                notification_preference_id,
                notification_preference_portable_id,
                lock_version: row.lock_version,
            }
        })
        .collect())
}

fn one(conn: &Connection, household_id: i64, row: PersonRow) -> Result<Person> {
    to_api(conn, household_id, vec![row])?
        .pop()
        .ok_or_else(|| ApiError::internal("person vanished while shaping"))
}

/// The person `id` if the actor has at least `needed` access (404/403 otherwise).
pub fn find_for(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<PersonRow> {
    let row =
        store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("person"))?;
    access::require_person(conn, actor, row.id, needed)?;
    Ok(row)
}

pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Person> {
    let row = find_for(conn, actor, id, AccessLevel::View)?;
    one(conn, actor.household_id, row)
}

pub fn list(
    conn: &Connection,
    actor: &Actor,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<Person>, i64)> {
    let (rows, total) = store::list_visible(conn, actor, updated_since, page)?;
    Ok((to_api(conn, actor.household_id, rows)?, total))
}

/// Checks submitted attributes, collecting every problem before answering.
fn validate(attrs: &PersonAttributes, creating: bool, today: Date) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    match &attrs.name {
        None if creating => add("name", "is required"),
        Some(None) => add("name", "must not be null"),
        _ => {}
    }
    match &attrs.date_of_birth {
        None if creating => add("date_of_birth", "is required"),
        Some(None) => add("date_of_birth", "must not be null"),
        Some(Some(dob)) if *dob > today => add("date_of_birth", "must not be in the future"),
        Some(Some(dob)) if dob.year() < 1880 => {
            add("date_of_birth", "is not a plausible date of birth")
        }
        _ => {}
    }
    if let Some(Some(email)) = &attrs.email
        && !plausible_email(email)
    {
        add("email", "must be an email address");
    }
    if let Some(None) = attrs.person_type {
        add("person_type", "must not be null");
    }
    if let Some(None) = attrs.has_capacity {
        add("has_capacity", "must not be null");
    }
    problems.check("the person's attributes are invalid")
}

pub fn plausible_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    email.len() <= MAX_EMAIL
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || c == ',')
        && !domain.contains('@')
}

fn apply(row: &mut PersonRow, attrs: PersonAttributes) {
    if let Some(Some(name)) = attrs.name {
        row.name = name.trim().to_string();
    }
    if let Some(email) = attrs.email {
        row.email = email.map(|e| e.trim().to_string());
    }
    if let Some(Some(dob)) = attrs.date_of_birth {
        row.date_of_birth = Some(dob.to_string());
    }
    if let Some(Some(person_type)) = attrs.person_type {
        row.person_type = person_type.as_str().to_string();
    }
    if let Some(Some(has_capacity)) = attrs.has_capacity {
        row.has_capacity = has_capacity;
    }
}

/// Any active member may add a person; a member who is not a manager gets
/// a manage grant on the person they created.
pub fn create(conn: &WriteTx, actor: &Actor, attrs: PersonAttributes) -> Result<Person> {
    let row = create_unowned(conn, actor.household_id, attrs)?;
    if !actor.is_manager() {
        grants::grant_to_creator(conn, actor, row.id, Relationship::FamilyMember)?;
    }
    one(conn, actor.household_id, row)
}

/// Checks a new person's attributes as `create` would, writing nothing: an
/// invitation checks the person it will create when accepted.
pub fn check_new(conn: &Connection, household_id: i64, attrs: &PersonAttributes) -> Result<()> {
    let today = household_store::today(conn, household_id)?;
    validate(attrs, true, today)?;
    let dob = attrs.date_of_birth.flatten();
    let person_type = attrs
        .person_type
        .flatten()
        .unwrap_or_else(|| default_type(dob, attrs.has_capacity.flatten(), today));
    let has_capacity = attrs
        .has_capacity
        .flatten()
        .unwrap_or(person_type == PersonType::Adult);
    match check_capacity_rule(dob, person_type, has_capacity, today) {
        Ok(()) => Ok(()),
        Err(found) => {
            let mut problems = Problems::default();
            for (field, message) in found {
                problems.add(field, message);
            }
            problems.check("the person's type and capacity do not follow the capacity rule")
        }
    }
}

/// Creates a person with no grant for anyone: the caller decides who gets
/// access (the creator, or an invited member linked to them).
pub fn create_unowned(
    conn: &WriteTx,
    household_id: i64,
    attrs: PersonAttributes,
) -> Result<PersonRow> {
    let today = household_store::today(conn, household_id)?;
    validate(&attrs, true, today)?;
    let dob = attrs.date_of_birth.flatten();
    // Defaults follow the capacity rule: a child is a minor without capacity.
    let person_type = attrs
        .person_type
        .flatten()
        .unwrap_or_else(|| default_type(dob, attrs.has_capacity.flatten(), today));
    let mut row = PersonRow {
        id: 0,
        portable_id: crate::db::new_portable_id(),
        name: String::new(),
        email: None,
        date_of_birth: None,
        person_type: person_type.as_str().to_string(),
        has_capacity: attrs
            .has_capacity
            .flatten()
            .unwrap_or(person_type == PersonType::Adult),
        lock_version: 1,
        updated_at: Timestamp::now(),
    };
    apply(&mut row, attrs);
    enforce_capacity_rule(&row, today, false)?;
    insert_new(conn, household_id, &mut row)?;
    Ok(row)
}

/// 422 when the row breaks the capacity rule. When only the date of birth
/// was sent, the disagreement is reported on it, saying what else to change.
fn enforce_capacity_rule(row: &PersonRow, today: Date, only_birth_date: bool) -> Result<()> {
    let dob = row
        .date_of_birth
        .as_deref()
        .and_then(|d| d.parse::<Date>().ok());
    let person_type = PersonType::parse(&row.person_type)
        .ok_or_else(|| ApiError::internal("stored person_type is unknown"))?;
    let Err(found) = check_capacity_rule(dob, person_type, row.has_capacity, today) else {
        return Ok(());
    };
    let mut problems = Problems::default();
    for (field, message) in found {
        if only_birth_date {
            problems.add(
                "date_of_birth",
                format!("makes the person's {field} wrong: {field} {message}; send person_type and has_capacity with it"),
            );
        } else {
            problems.add(field, message);
        }
    }
    problems.check("the person's type and capacity do not follow the capacity rule")
}

fn insert_new(conn: &WriteTx, household_id: i64, row: &mut PersonRow) -> Result<()> {
    row.id = store::insert(conn, household_id, row)?;
    change_feed::append(
        conn,
        Change {
            household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action: Action::Create,
            person_id: Some(row.id),
        },
    )
}

/// A member's own person, created with the member by set-up; its date of
/// birth is filled in later through the profile.
pub fn create_linked(conn: &WriteTx, household_id: i64, name: &str) -> Result<i64> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > model::PersonName::MAX {
        return Err(ApiError::invalid(
            "name",
            format!("must be 1 to {} characters", model::PersonName::MAX),
        ));
    }
    let mut row = PersonRow {
        id: 0,
        portable_id: crate::db::new_portable_id(),
        name: name.to_string(),
        email: None,
        date_of_birth: None,
        person_type: PersonType::Adult.as_str().to_string(),
        has_capacity: true,
        lock_version: 1,
        updated_at: Timestamp::now(),
    };
    insert_new(conn, household_id, &mut row)?;
    Ok(row.id)
}

/// PATCH and PUT alike: the spec's person update takes any subset of fields.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: PersonAttributes,
) -> Result<Person> {
    let mut row = find_for(conn, actor, id, WRITE_LEVEL)?;
    if_match.check(&etag(&row.portable_id, row.lock_version))?;
    let today = household_store::today(conn, actor.household_id)?;
    validate(&attrs, false, today)?;
    let touches_rule = attrs.date_of_birth.is_some()
        || attrs.person_type.is_some()
        || attrs.has_capacity.is_some();
    let only_birth_date = attrs.person_type.is_none() && attrs.has_capacity.is_none();
    apply(&mut row, attrs);
    if touches_rule {
        enforce_capacity_rule(&row, today, only_birth_date)?;
    }
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::update(conn, &row)?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action: Action::Update,
            person_id: Some(row.id),
        },
    )?;
    one(conn, actor.household_id, row)
}

/// Something the person shows changed elsewhere (its `location_ids`, its
/// `notification_preference_id`): a new version of the person, so a new
/// ETag, and a Person change-feed entry, in the caller's transaction.
pub fn touch(conn: &WriteTx, actor: &Actor, person: &mut PersonRow) -> Result<()> {
    person.lock_version += 1;
    person.updated_at = Timestamp::now();
    store::update(conn, person)?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: crate::domain::record_type::PERSON,
            record_id: person.id,
            record_portable_id: &person.portable_id,
            action: Action::Update,
            person_id: Some(person.id),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_counts_whole_years() {
        let d = |s: &str| s.parse::<Date>().unwrap();
        assert_eq!(age_on(d("2010-06-15"), d("2026-06-14")), 15);
        assert_eq!(age_on(d("2010-06-15"), d("2026-06-15")), 16);
        assert_eq!(age_on(d("2012-02-29"), d("2026-02-28")), 13);
        assert_eq!(age_on(d("2012-02-29"), d("2026-03-01")), 14);
    }

    #[test]
    fn emails() {
        assert!(plausible_email("nat@example.org"));
        assert!(!plausible_email("nat@"));
        assert!(!plausible_email("nat example.org"));
        assert!(!plausible_email("a@b@c.org"));
    }
}

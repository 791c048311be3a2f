//! Reading the fields of a portable record, and the person rule an import
//! calls for a person without a date of birth.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::super::model::RawRecord;
use crate::auth::Actor;
use crate::db::WriteTx;
use crate::domain::{IfMatch, ResourceId};
use crate::error::{ApiError, Result};
use crate::household::people;

/// An optional text field: a string or null.
pub(super) fn text<'r>(record: &'r RawRecord, field: &str) -> Result<Option<&'r str>> {
    match record.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(field, "must be text or null")),
    }
}

/// An optional timestamp, in the one stored form (so stored times compare
/// as text).
pub(super) fn timestamp(
    record: &RawRecord,
    field: &str,
) -> Result<Option<crate::domain::Timestamp>> {
    match text(record, field)? {
        None => Ok(None),
        Some(t) => crate::domain::Timestamp::parse(t).map(Some).ok_or_else(|| {
            ApiError::invalid(field, "must be an ISO 8601 date-time with an offset")
        }),
    }
}

pub(super) fn is_uuid(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// Equal as portable values: decimals and dates compared as sent, objects
/// key by key.
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    a == b
}

/// The request attributes of a record: `(portable field, attribute name)`
/// pairs, taking only the fields the record carries.
pub(super) fn attributes(record: &RawRecord, pairs: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (from, to) in pairs {
        if let Some(value) = record.get(*from) {
            out.insert((*to).to_string(), value.clone());
        }
    }
    Value::Object(out)
}

/// Attributes as the rule's own input type, with the same 422s a REST body
/// would get.
pub(super) fn typed<T: DeserializeOwned>(value: Value) -> Result<T> {
    crate::domain::body::typed(Some(&value))
}

pub(super) fn strings(record: &RawRecord, field: &str) -> Vec<String> {
    record
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn portable_ref(record: &RawRecord, field: &str) -> Result<ResourceId> {
    record
        .get(field)
        .and_then(Value::as_str)
        .map(|id| ResourceId::Portable(id.to_string()))
        .ok_or_else(|| ApiError::invalid(field, "is required"))
}

/// A person through the person rule. Only set-up makes a person without a
/// date of birth (a member's own person); such a person is made the same
/// way and then given the bundle's type and capacity through the update
/// rule.
pub(super) fn create_person(
    tx: &WriteTx,
    actor: &Actor,
    record: &RawRecord,
) -> Result<(i64, String)> {
    let has_birth_date = record.get("date_of_birth").is_some_and(|v| !v.is_null());
    if has_birth_date {
        let attrs = typed(attributes(
            record,
            &[
                ("name", "name"),
                ("email", "email"),
                ("date_of_birth", "date_of_birth"),
                ("person_type", "person_type"),
                ("has_capacity", "has_capacity"),
            ],
        ))?;
        let made = people::create(tx, actor, attrs)?;
        return Ok((made.id, made.portable_id));
    }
    actor.require_manager("import a person without a date of birth")?;
    let name = record
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let id = people::create_linked(tx, actor.household_id, name)?;
    let attrs = typed(attributes(
        record,
        &[
            ("email", "email"),
            ("person_type", "person_type"),
            ("has_capacity", "has_capacity"),
        ],
    ))?;
    let made = people::update(tx, actor, &ResourceId::Numeric(id), &IfMatch(None), attrs)?;
    Ok((made.id, made.portable_id))
}

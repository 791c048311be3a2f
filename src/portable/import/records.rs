//! Reading the fields of a portable record.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::super::model::RawRecord;
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};

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

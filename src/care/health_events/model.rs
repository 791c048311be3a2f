//! Health event API shapes.

use jiff::civil::Date;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::{ResourceId, Versioned, etag, present, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::http::replace::Whole;

/// What kind of health event this is (DESIGN.md decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Illness,
    SuspectedSideEffect,
}

impl EventKind {
    pub const ALL: &'static [&'static str] = &["illness", "suspected_side_effect"];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Illness => "illness",
            EventKind::SuspectedSideEffect => "suspected_side_effect",
        }
    }

    pub fn parse(text: &str) -> Option<EventKind> {
        match text {
            "illness" => Some(EventKind::Illness),
            "suspected_side_effect" => Some(EventKind::SuspectedSideEffect),
            _ => None,
        }
    }
}

/// How bad it was; null when not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Mild,
    Moderate,
    Severe,
}

impl Severity {
    pub const ALL: &'static [&'static str] = &["mild", "moderate", "severe"];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Mild => "mild",
            Severity::Moderate => "moderate",
            Severity::Severe => "severe",
        }
    }

    pub fn parse(text: &str) -> Option<Severity> {
        match text {
            "mild" => Some(Severity::Mild),
            "moderate" => Some(Severity::Moderate),
            "severe" => Some(Severity::Severe),
            _ => None,
        }
    }
}

impl ToSql for EventKind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for EventKind {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        EventKind::parse(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown event_kind {text}").into()))
    }
}

impl ToSql for Severity {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for Severity {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        Severity::parse(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown severity {text}").into()))
    }
}

/// A health event as stored, before its medication links are added.
#[derive(Debug, Clone)]
pub struct HealthEventRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub event_kind: EventKind,
    pub severity: Option<Severity>,
    pub title: String,
    pub notes: Option<String>,
    /// ISO dates ('YYYY-MM-DD').
    pub started_on: String,
    pub ended_on: Option<String>,
    pub lock_version: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// The API shape: every key always present, nothing else.
#[derive(Debug, Clone, Serialize)]
pub struct HealthEvent {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub event_kind: EventKind,
    pub severity: Option<Severity>,
    pub title: String,
    pub notes: Option<String>,
    pub started_on: String,
    pub ended_on: Option<String>,
    pub medication_ids: Vec<i64>,
    pub medication_portable_ids: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for HealthEvent {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// HealthEventAttributes: absent fields stay as they are (PATCH) or take
/// their defaults (create, PUT); nullable fields may be set to null.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthEventAttributes {
    #[serde(default, deserialize_with = "present")]
    pub person_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub event_kind: Option<Option<EventKind>>,
    #[serde(default, deserialize_with = "present")]
    pub severity: Option<Option<Severity>>,
    #[serde(default, deserialize_with = "present")]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub notes: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub started_on: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub ended_on: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub medication_ids: Option<Option<Vec<ResourceId>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthEventBody {
    pub health_event: HealthEventAttributes,
}

/// A replace carries every writable attribute.
impl Whole for HealthEventBody {
    const KEY: &'static str = "health_event";
    const FIELDS: &'static [&'static str] = &[
        "person_id",
        "event_kind",
        "severity",
        "title",
        "notes",
        "started_on",
        "ended_on",
        "medication_ids",
    ];
}

fn event_kind_schema() -> Value {
    json!({"type": "string", "enum": EventKind::ALL})
}

fn severity_schema() -> Value {
    json!({"type": "string", "enum": Severity::ALL})
}

pub fn health_event_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": [
            "id", "portable_id", "person_id", "person_portable_id", "event_kind", "severity",
            "title", "notes", "started_on", "ended_on", "medication_ids",
            "medication_portable_ids", "created_at", "updated_at",
        ],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "person_id": {"$ref": "#/components/schemas/NumericId"},
            "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
            "event_kind": event_kind_schema(),
            "severity": nullable(severity_schema()),
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "notes": {"type": ["string", "null"], "maxLength": 4000},
            "started_on": {"$ref": "#/components/schemas/Date"},
            "ended_on": nullable(json!({"$ref": "#/components/schemas/Date"})),
            "medication_ids": {"type": "array", "items": {"$ref": "#/components/schemas/NumericId"}},
            "medication_portable_ids": {"type": "array", "items": {"$ref": "#/components/schemas/PortableId"}},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

/// HealthEventAttributes; `required` lists what the request needs.
pub fn health_event_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "person_id": {
                "description": "The person the event happened to (numeric or portable id); it cannot change after creation",
                "anyOf": resource_ref_schema()["anyOf"].clone(),
            },
            "event_kind": event_kind_schema(),
            "severity": nullable(severity_schema()),
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "notes": {"type": ["string", "null"], "maxLength": 4000},
            "started_on": {"$ref": "#/components/schemas/Date"},
            "ended_on": {
                "description": "On or after started_on; null while the event is ongoing",
                "anyOf": [{"$ref": "#/components/schemas/Date"}, {"type": "null"}],
            },
            "medication_ids": {
                "description": "Medications of this household the event names (numeric or portable ids); duplicates are ignored",
                "type": "array",
                "maxItems": 100,
                "items": resource_ref_schema(),
            },
        },
    })
}

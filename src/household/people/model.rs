//! Person API shapes.

use crate::domain::{Versioned, etag, present};
use jiff::civil::Date;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersonType {
    Adult,
    Minor,
    DependentAdult,
}

impl PersonType {
    pub fn parse(s: &str) -> Option<PersonType> {
        match s {
            "adult" => Some(PersonType::Adult),
            "minor" => Some(PersonType::Minor),
            "dependent_adult" => Some(PersonType::DependentAdult),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PersonType::Adult => "adult",
            PersonType::Minor => "minor",
            PersonType::DependentAdult => "dependent_adult",
        }
    }
}

/// The spec's Person: every key always present, nothing else.
#[derive(Debug, Clone, Serialize)]
pub struct Person {
    pub id: i64,
    pub portable_id: String,
    pub updated_at: String,
    pub name: String,
    pub email: Option<String>,
    pub date_of_birth: Option<String>,
    pub person_type: String,
    pub has_capacity: bool,
    pub age: Option<i64>,
    pub location_ids: Vec<i64>,
    pub location_portable_ids: Vec<String>,
    pub notification_preference_id: Option<i64>,
    pub notification_preference_portable_id: Option<String>,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Person {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// PersonAttributes: absent fields stay as they are; `email` may be set to null.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonAttributes {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub date_of_birth: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub person_type: Option<Option<PersonType>>,
    #[serde(default, deserialize_with = "present")]
    pub has_capacity: Option<Option<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonBody {
    pub person: PersonAttributes,
}

pub fn person_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "portable_id", "updated_at", "name", "email", "date_of_birth",
            "person_type", "has_capacity", "age", "location_ids", "location_portable_ids",
            "notification_preference_id", "notification_preference_portable_id"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
            "name": {"type": "string", "minLength": 1},
            "email": {"type": ["string", "null"], "format": "email"},
            "date_of_birth": {"type": ["string", "null"], "format": "date"},
            "person_type": {"type": "string", "enum": ["adult", "minor", "dependent_adult"]},
            "has_capacity": {"type": "boolean"},
            "age": {"type": ["integer", "null"], "minimum": 0},
            "location_ids": {"type": "array", "items": {"$ref": "#/components/schemas/NumericId"}},
            "location_portable_ids": {"type": "array", "items": {"$ref": "#/components/schemas/PortableId"}},
            "notification_preference_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
            "notification_preference_portable_id": {"anyOf": [{"$ref": "#/components/schemas/PortableId"}, {"type": "null"}]},
        },
    })
}

/// PersonAttributes; `required` lists what a create needs.
pub fn person_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "email": {"type": ["string", "null"], "format": "email", "maxLength": 254},
            "date_of_birth": {"type": "string", "format": "date"},
            "person_type": {"type": "string", "enum": ["adult", "minor", "dependent_adult"],
                "description": "Follows age in the household time zone: minor under 18 (without capacity), adult 18 or over with capacity, dependent_adult 18 or over without capacity. Defaults from date_of_birth and has_capacity."},
            "has_capacity": {"type": "boolean",
                "description": "true exactly for an adult; defaults from person_type"},
        },
    })
}

//! Person API shapes.

use crate::domain::{Timestamp, Versioned, etag, present};
use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::Name;
use crate::domain::vocabulary;
use crate::http::openapi;

vocabulary!(
    /// What kind of person, by age and capacity.
    PersonType {
        Adult => "adult",
        Minor => "minor",
        DependentAdult => "dependent_adult",
    }
);

/// A person's name: not blank, at most 200 characters.
pub type PersonName = Name<200>;

/// The longest email address accepted, in bytes.
pub const MAX_EMAIL: usize = 254;

// Every key is always present, nothing else.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Person {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub updated_at: Timestamp,
    #[schemars(length(min = 1))]
    pub name: String,
    #[schemars(extend("format" = "email"))]
    pub email: Option<String>,
    #[schemars(with = "Option<openapi::Date>")]
    pub date_of_birth: Option<String>,
    #[schemars(with = "PersonType")]
    pub person_type: String,
    pub has_capacity: bool,
    #[schemars(range(min = 0))]
    pub age: Option<i64>,
    #[schemars(with = "Vec<openapi::NumericId>")]
    pub location_ids: Vec<i64>,
    #[schemars(with = "Vec<openapi::PortableId>")]
    pub location_portable_ids: Vec<String>,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub notification_preference_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub notification_preference_portable_id: Option<String>,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Person {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Absent fields stay as they are; `email` may be set to null.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonAttributes {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "PersonName")]
    pub name: Option<Option<PersonName>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", extend("format" = "email", "maxLength" = MAX_EMAIL))]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "openapi::Date")]
    pub date_of_birth: Option<Option<Date>>,
    /// Follows age in the household time zone: minor under 18 (without
    /// capacity), adult 18 or over with capacity, dependent_adult 18 or over
    /// without capacity. Defaults from date_of_birth and has_capacity.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "PersonType")]
    pub person_type: Option<Option<PersonType>>,
    /// true exactly for an adult; defaults from person_type
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub has_capacity: Option<Option<bool>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PersonUpdateRequest")]
pub struct PersonBody {
    pub person: PersonAttributes,
}

//! Household settings API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::Name;
use crate::domain::{Timestamp, Versioned, etag, present};
use crate::household::model::Household;
use crate::http::openapi;
use crate::http::replace::Whole;

/// A household's name: not blank, at most 200 characters.
pub type HouseholdName = Name<200>;

// The household's administrable settings.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HouseholdSettings {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "HouseholdName")]
    pub name: String,
    /// IANA time zone name
    #[schemars(length(min = 1))]
    pub time_zone: String,
    /// Longest life, in days, of a new household app token
    #[schemars(range(min = 1, max = crate::household::MAX_TOKEN_AGE_DAYS))]
    pub app_token_max_age_days: i64,
    /// Minutes after a dose's time that an unrecorded dose is reported missed
    #[schemars(range(min = 1, max = crate::reminders::MAX_GRACE_MINUTES))]
    pub missed_dose_grace_minutes: i64,
    /// How reminder delivery is going, per channel (read only)
    pub delivery_health: Vec<crate::reminders::model::ChannelHealth>,
    /// What in this server's configuration keeps a feature off (read only)
    pub warnings: Vec<SettingsWarning>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

/// A feature the server's configuration keeps off, for administrators.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SettingsWarning {
    /// Stable code, e.g. medication_lookup_unavailable
    #[schemars(length(min = 1))]
    pub code: &'static str,
    #[schemars(length(min = 1))]
    pub message: &'static str,
}

impl HouseholdSettings {
    /// The settings of `household`, before delivery health and warnings
    /// are added.
    pub fn of(household: Household, missed_dose_grace_minutes: i64) -> HouseholdSettings {
        HouseholdSettings {
            id: household.id,
            portable_id: household.portable_id,
            name: household.name,
            time_zone: household.time_zone,
            app_token_max_age_days: household.app_token_max_age_days,
            missed_dose_grace_minutes,
            delivery_health: Vec::new(),
            warnings: Vec::new(),
            created_at: household.created_at,
            updated_at: household.updated_at,
            lock_version: household.lock_version,
        }
    }

    /// The household's own record, as these settings change it.
    pub fn household(&self) -> Household {
        Household {
            id: self.id,
            portable_id: self.portable_id.clone(),
            name: self.name.clone(),
            time_zone: self.time_zone.clone(),
            app_token_max_age_days: self.app_token_max_age_days,
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            lock_version: self.lock_version,
        }
    }
}

impl Versioned for HouseholdSettings {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Settings attributes: absent fields stay as they are (PATCH) or are
/// refused (PUT, which carries them all); null is never accepted.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HouseholdSettingsAttributes")]
pub struct SettingsAttributes {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "HouseholdName")]
    pub name: Option<Option<HouseholdName>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "openapi::TimeZone")]
    pub time_zone: Option<Option<String>>,
    /// Longest life, in days, of a new household app token
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 1, max = crate::household::MAX_TOKEN_AGE_DAYS))]
    pub app_token_max_age_days: Option<Option<i64>>,
    /// Minutes after a dose's time that an unrecorded dose is reported
    /// missed (default 60); a PUT without it keeps the current value
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 1, max = crate::reminders::MAX_GRACE_MINUTES))]
    pub missed_dose_grace_minutes: Option<Option<i64>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HouseholdSettingsUpdateRequest")]
pub struct SettingsBody {
    pub household: SettingsAttributes,
}

impl Whole for SettingsBody {
    const KEY: &'static str = "household";
    const FIELDS: &'static [&'static str] = &["name", "time_zone", "app_token_max_age_days"];
}

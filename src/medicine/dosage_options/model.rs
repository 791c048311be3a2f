//! Dosage option API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decimal::{Dec, NonNegativeDecimal, PositiveDecimal};
use crate::domain::{AtLeast, ResourceId, Text, Timestamp, Versioned, etag, present};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::medicine::forecast::StockStatus;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// The longest frequency text.
pub const MAX_FREQUENCY: usize = 200;
/// The longest description.
pub const MAX_DESCRIPTION: usize = 2000;

// A dosage option as stored and as sent: it has no derived fields.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DosageOption {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    pub amount: Dec,
    pub unit: DoseUnit,
    pub frequency: Option<String>,
    pub description: Option<String>,
    pub default_for_adults: bool,
    pub default_for_children: bool,
    #[schemars(range(min = 1, max = i64::MAX))]
    pub default_max_daily_doses: Option<i64>,
    pub default_min_hours_between_doses: Option<Dec>,
    pub default_dose_cycle: Option<DoseCycle>,
    /// This option's own stock; null when it draws on the medication's stock (its low_stock and out_of_stock are then false and its days_until_* null)
    pub current_supply: Option<Dec>,
    pub reorder_threshold: Option<Dec>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

impl DosageOption {
    /// A new option of a medication with every optional field at its
    /// default, made `now`. `amount` and `unit` are placeholders until attributes are
    /// applied: creation and replacement require both.
    pub fn blank(
        medication_id: i64,
        medication_portable_id: String,
        now: Timestamp,
    ) -> DosageOption {
        DosageOption {
            id: 0,
            portable_id: String::new(),
            medication_id,
            medication_portable_id,
            amount: Dec::ZERO,
            unit: DoseUnit::Tablet,
            frequency: None,
            description: None,
            default_for_adults: false,
            default_for_children: false,
            default_max_daily_doses: None,
            default_min_hours_between_doses: None,
            default_dose_cycle: None,
            current_supply: None,
            reorder_threshold: None,
            created_at: now.clone(),
            updated_at: now,
            lock_version: 1,
        }
    }
}

impl Versioned for DosageOption {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

// A dosage option as sent: the stored fields and, for an option that
// keeps its own stock, the same derived stock fields as a medication's
// (false and null for one drawing on the medication's stock).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "DosageOption", deny_unknown_fields)]
pub struct DosageOptionView {
    #[serde(flatten)]
    pub option: DosageOption,
    #[serde(flatten)]
    pub stock: StockStatus,
}

impl Versioned for DosageOptionView {
    fn etag(&self) -> String {
        self.option.etag()
    }
}

/// Dosage option attributes; absent fields are left alone (PATCH) or take
/// their defaults (POST, PUT); null clears where null is allowed.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DosageOptionAttributes {
    /// The medication, numeric or portable id; cannot change after creation
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ResourceId")]
    pub medication_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "PositiveDecimal")]
    pub amount: Option<Option<PositiveDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "DoseUnit")]
    pub unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<MAX_FREQUENCY>>")]
    pub frequency: Option<Option<Text<MAX_FREQUENCY>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<MAX_DESCRIPTION>>")]
    pub description: Option<Option<Text<MAX_DESCRIPTION>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool", extend("default" = false))]
    pub default_for_adults: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool", extend("default" = false))]
    pub default_for_children: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<AtLeast<1>>")]
    pub default_max_daily_doses: Option<Option<AtLeast<1>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub default_min_hours_between_doses: Option<Option<NonNegativeDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<DoseCycle>")]
    pub default_dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub current_supply: Option<Option<NonNegativeDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub reorder_threshold: Option<Option<NonNegativeDecimal>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DosageOptionUpdateRequest")]
pub struct DosageOptionBody {
    pub dosage_option: DosageOptionAttributes,
}

/// A replace carries every writable attribute.
impl Whole for DosageOptionBody {
    const KEY: &'static str = "dosage_option";
    const FIELDS: &'static [&'static str] = &[
        "amount",
        "unit",
        "frequency",
        "description",
        "default_for_adults",
        "default_for_children",
        "default_max_daily_doses",
        "default_min_hours_between_doses",
        "default_dose_cycle",
        "current_supply",
        "reorder_threshold",
    ];
}

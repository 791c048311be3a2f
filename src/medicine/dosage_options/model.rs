//! Dosage option API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::decimal::{self, Dec};
use crate::domain::{ResourceId, Versioned, etag, present, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::http::replace::Whole;
use crate::medicine::forecast::{self, StockStatus};
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// A dosage option as stored and as sent: it has no derived fields.
#[derive(Debug, Clone, Serialize)]
pub struct DosageOption {
    pub id: i64,
    pub portable_id: String,
    pub medication_id: i64,
    pub medication_portable_id: String,
    pub amount: Dec,
    pub unit: DoseUnit,
    pub frequency: Option<String>,
    pub description: Option<String>,
    pub default_for_adults: bool,
    pub default_for_children: bool,
    pub default_max_daily_doses: Option<i64>,
    pub default_min_hours_between_doses: Option<Dec>,
    pub default_dose_cycle: Option<DoseCycle>,
    /// `None`: this option draws on the medication's stock, not its own.
    pub current_supply: Option<Dec>,
    pub reorder_threshold: Option<Dec>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl DosageOption {
    /// A new option of a medication with every optional field at its
    /// default. `amount` and `unit` are placeholders until attributes are
    /// applied: creation and replacement require both.
    pub fn blank(medication_id: i64, medication_portable_id: String) -> DosageOption {
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
            created_at: String::new(),
            updated_at: String::new(),
            lock_version: 1,
        }
    }
}

impl Versioned for DosageOption {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// A dosage option as sent: the stored fields and, for an option that
/// keeps its own stock, the same derived stock fields as a medication's
/// (false and null for one drawing on the medication's stock).
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DosageOptionAttributes {
    #[serde(default, deserialize_with = "present")]
    pub medication_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub amount: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    pub frequency: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub default_for_adults: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub default_for_children: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub default_max_daily_doses: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    pub default_min_hours_between_doses: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub default_dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    pub current_supply: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub reorder_threshold: Option<Option<Dec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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

pub fn dosage_option_schema() -> Value {
    let props = json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "medication_id": {"$ref": "#/components/schemas/NumericId"},
        "medication_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "amount": decimal::schema(),
        "unit": DoseUnit::schema(),
        "frequency": nullable(json!({"type": "string"})),
        "description": nullable(json!({"type": "string"})),
        "default_for_adults": {"type": "boolean"},
        "default_for_children": {"type": "boolean"},
        "default_max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
        "default_min_hours_between_doses": nullable(decimal::schema()),
        "default_dose_cycle": nullable(DoseCycle::schema()),
        "current_supply": {
            "anyOf": [decimal::schema(), {"type": "null"}],
            "description": "This option's own stock; null when it draws on the medication's stock",
        },
        "reorder_threshold": nullable(decimal::schema()),
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "updated_at": {"$ref": "#/components/schemas/Timestamp"},
    });
    let mut props = props;
    if let (Some(props), Some(stock)) = (
        props.as_object_mut(),
        forecast::schema_properties(
            "this option's own current_supply (false or null when it draws on the medication's stock)",
        )
        .as_object(),
    ) {
        props.extend(stock.clone());
    }
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn dosage_option_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "medication_id": {
                "allOf": [resource_ref_schema()],
                "description": "The medication, numeric or portable id; cannot change after creation",
            },
            "amount": decimal::positive_schema(),
            "unit": DoseUnit::schema(),
            "frequency": nullable(json!({"type": "string", "maxLength": 200})),
            "description": nullable(json!({"type": "string", "maxLength": 2000})),
            "default_for_adults": {"type": "boolean", "default": false},
            "default_for_children": {"type": "boolean", "default": false},
            "default_max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
            "default_min_hours_between_doses": nullable(decimal::non_negative_schema()),
            "default_dose_cycle": nullable(DoseCycle::schema()),
            "current_supply": nullable(decimal::non_negative_schema()),
            "reorder_threshold": nullable(decimal::non_negative_schema()),
        },
    })
}

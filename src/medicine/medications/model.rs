//! Medication API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::decimal::{self, Dec};
use crate::domain::{ResourceId, Versioned, etag, present, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::http::replace::Whole;
use crate::medicine::vocab::{ConceptClass, DoseUnit, ReorderStatus, ScheduleType};

/// A medication as stored, before the derived fields are added.
#[derive(Debug, Clone, Default)]
pub struct MedicationRow {
    pub id: i64,
    pub portable_id: String,
    pub location_id: Option<i64>,
    pub location_portable_id: Option<String>,
    pub name: String,
    pub friendly_name: Option<String>,
    pub category: Option<String>,
    pub description: Option<String>,
    pub dose_amount: Option<Dec>,
    pub dose_unit: Option<DoseUnit>,
    pub default_schedule_type: Option<ScheduleType>,
    pub current_supply: Dec,
    pub reorder_threshold: Option<Dec>,
    pub barcode: Option<String>,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<ConceptClass>,
    pub reorder: Reorder,
    pub lock_version: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// Where the latest reorder stands.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reorder {
    #[serde(rename = "reorder_status")]
    pub status: Option<ReorderStatus>,
    #[serde(rename = "reorder_supplier")]
    pub supplier: Option<String>,
    #[serde(rename = "reorder_quantity")]
    pub quantity: Option<Dec>,
    #[serde(rename = "reorder_expected_on")]
    pub expected_on: Option<String>,
    #[serde(rename = "reorder_ordered_at")]
    pub ordered_at: Option<String>,
    #[serde(rename = "reorder_received_at")]
    pub received_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Medication {
    pub id: i64,
    pub portable_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub location_id: Option<i64>,
    pub location_portable_id: Option<String>,
    pub name: String,
    pub friendly_name: Option<String>,
    pub display_name: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub dose_amount: Option<Dec>,
    pub dose_unit: Option<DoseUnit>,
    pub default_schedule_type: Option<ScheduleType>,
    pub current_supply: Dec,
    pub reorder_threshold: Option<Dec>,
    pub barcode: Option<String>,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<ConceptClass>,
    #[serde(flatten)]
    pub reorder: Reorder,
    #[serde(flatten)]
    pub stock: crate::medicine::forecast::StockStatus,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Medication {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Medication attributes; absent fields are left alone, null clears.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MedicationAttributes {
    #[serde(default, deserialize_with = "present")]
    pub location_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub friendly_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub category: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_amount: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    pub default_schedule_type: Option<Option<ScheduleType>>,
    #[serde(default, deserialize_with = "present")]
    pub current_supply: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub reorder_threshold: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub barcode: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub dmd_code: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub dmd_system: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub dmd_concept_class: Option<Option<ConceptClass>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MedicationBody {
    pub medication: MedicationAttributes,
}

/// A replace carries every writable attribute.
impl Whole for MedicationBody {
    const KEY: &'static str = "medication";
    const FIELDS: &'static [&'static str] = &[
        "location_id",
        "name",
        "friendly_name",
        "category",
        "description",
        "dose_amount",
        "dose_unit",
        "default_schedule_type",
        "reorder_threshold",
        "barcode",
        "dmd_code",
        "dmd_system",
        "dmd_concept_class",
    ];
}

fn text(max: u32) -> Value {
    json!({"type": "string", "maxLength": max})
}

pub fn medication_schema() -> Value {
    let props = json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        "location_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "location_portable_id": nullable(json!({"$ref": "#/components/schemas/PortableId"})),
        "name": {"type": "string", "minLength": 1},
        "friendly_name": nullable(json!({"type": "string"})),
        "display_name": {"type": "string", "minLength": 1, "description": "friendly_name when set, else name"},
        "category": nullable(json!({"type": "string"})),
        "description": nullable(json!({"type": "string"})),
        "dose_amount": nullable(decimal::schema()),
        "dose_unit": nullable(DoseUnit::schema()),
        "default_schedule_type": nullable(ScheduleType::schema()),
        "current_supply": decimal::schema(),
        "reorder_threshold": nullable(decimal::schema()),
        "barcode": nullable(json!({"type": "string", "pattern": "^[0-9]{13,14}$"})),
        "dmd_code": nullable(json!({"type": "string"})),
        "dmd_system": nullable(json!({"type": "string"})),
        "dmd_concept_class": nullable(ConceptClass::schema()),
        "reorder_status": nullable(ReorderStatus::schema()),
        "reorder_supplier": nullable(json!({"type": "string"})),
        "reorder_quantity": nullable(decimal::schema()),
        "reorder_expected_on": nullable(json!({"type": "string", "format": "date"})),
        "reorder_ordered_at": nullable(json!({"$ref": "#/components/schemas/Timestamp"})),
        "reorder_received_at": nullable(json!({"$ref": "#/components/schemas/Timestamp"})),
    });
    let mut props = props;
    if let (Some(props), Some(stock)) = (
        props.as_object_mut(),
        crate::medicine::forecast::schema_properties("current_supply").as_object(),
    ) {
        props.extend(stock.clone());
    }
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn medication_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "location_id": nullable(resource_ref_schema()),
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "friendly_name": nullable(text(200)),
            "category": nullable(text(100)),
            "description": nullable(text(2000)),
            "dose_amount": nullable(decimal::positive_schema()),
            "dose_unit": nullable(DoseUnit::schema()),
            "default_schedule_type": nullable(ScheduleType::schema()),
            "current_supply": decimal::non_negative_schema(),
            "reorder_threshold": nullable(decimal::non_negative_schema()),
            "barcode": nullable(json!({"type": "string", "pattern": "^[0-9]{13,14}$"})),
            "dmd_code": nullable(json!({"type": "string", "pattern": "^[0-9]{6,18}$"})),
            "dmd_system": nullable(text(200)),
            "dmd_concept_class": nullable(ConceptClass::schema()),
        },
    })
}

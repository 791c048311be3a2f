//! Person medication (direct assignment) API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::care::schedules::dose::{Dose, DoseAttributes};
use crate::care::sources::Sourced;
use crate::decimal::{self, Dec};
use crate::domain::{ResourceId, present, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::http::replace::Whole;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// Whether an assignment is taken on a routine or only when needed. As-needed
/// assignments have no expected doses and never count in routine totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdministrationKind {
    Routine,
    AsNeeded,
}

impl AdministrationKind {
    pub const ALL: &'static [&'static str] = &["routine", "as_needed"];

    pub fn as_str(self) -> &'static str {
        match self {
            AdministrationKind::Routine => "routine",
            AdministrationKind::AsNeeded => "as_needed",
        }
    }

    pub fn parse(text: &str) -> Option<AdministrationKind> {
        match text {
            "routine" => Some(AdministrationKind::Routine),
            "as_needed" => Some(AdministrationKind::AsNeeded),
            _ => None,
        }
    }

    pub fn schema() -> Value {
        json!({"type": "string", "enum": Self::ALL})
    }
}

impl rusqlite::types::ToSql for AdministrationKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for AdministrationKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        AdministrationKind::parse(text).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(
                format!("unknown administration kind {text}").into(),
            )
        })
    }
}

/// A direct assignment as stored.
#[derive(Debug, Clone, Serialize)]
pub struct PersonMedicationRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    #[serde(flatten)]
    pub dose: Dose,
    pub administration_kind: AdministrationKind,
    /// False while paused.
    pub active: bool,
    pub notes: Option<String>,
    /// Order among the person's assignments; unique per person, stable.
    pub position: i64,
    pub retired_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

/// A direct assignment as sent, with its open pause period.
pub type PersonMedication = Sourced<PersonMedicationRow>;

/// Assignment attributes; absent fields are left alone (PATCH) or take
/// their defaults (POST, PUT); null clears where null is allowed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonMedicationAttributes {
    #[serde(default, deserialize_with = "present")]
    pub person_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub medication_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub source_dosage_option_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_amount: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    pub max_daily_doses: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    pub min_hours_between_doses: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub administration_kind: Option<Option<AdministrationKind>>,
    #[serde(default, deserialize_with = "present")]
    pub notes: Option<Option<String>>,
}

impl PersonMedicationAttributes {
    /// Takes out the attributes the dose rules settle.
    pub fn take_dose(&mut self) -> DoseAttributes {
        DoseAttributes {
            medication_id: self.medication_id.take(),
            source_dosage_option_id: self.source_dosage_option_id.take(),
            dose_amount: self.dose_amount.take(),
            dose_unit: self.dose_unit.take(),
            dose_cycle: self.dose_cycle.take(),
            max_daily_doses: self.max_daily_doses.take(),
            min_hours_between_doses: self.min_hours_between_doses.take(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonMedicationBody {
    pub person_medication: PersonMedicationAttributes,
}

/// A replace carries every writable attribute.
impl Whole for PersonMedicationBody {
    const KEY: &'static str = "person_medication";
    const FIELDS: &'static [&'static str] = &[
        "medication_id",
        "source_dosage_option_id",
        "dose_amount",
        "dose_unit",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "administration_kind",
        "notes",
    ];
}

/// Which way an assignment moves among its person's assignments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Towards the start (a lower position).
    Up,
    /// Towards the end (a higher position).
    Down,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderBody {
    pub direction: Direction,
}

pub fn reorder_request_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["direction"],
        "properties": {"direction": {"type": "string", "enum": ["up", "down"],
            "description": "up: swap with the assignment before it; down: with the one after it"}},
    })
}

pub fn person_medication_schema() -> Value {
    let props = json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "person_id": {"$ref": "#/components/schemas/NumericId"},
        "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "medication_id": {"$ref": "#/components/schemas/NumericId"},
        "medication_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "source_dosage_option_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "source_dosage_option_portable_id": nullable(json!({"$ref": "#/components/schemas/PortableId"})),
        "dose_amount": decimal::positive_schema(),
        "dose_unit": DoseUnit::schema(),
        "dose_cycle": nullable(DoseCycle::schema()),
        "max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
        "min_hours_between_doses": nullable(decimal::non_negative_schema()),
        "administration_kind": AdministrationKind::schema(),
        "active": {"type": "boolean", "description": "False while the assignment is paused"},
        "notes": nullable(json!({"type": "string"})),
        "position": {"type": "integer", "description": "Order among the person's assignments; unique per person"},
        "retired_at": nullable(json!({"$ref": "#/components/schemas/Timestamp"})),
        "current_pause_period": {
            "anyOf": [{"$ref": "#/components/schemas/MedicationPausePeriod"}, {"type": "null"}],
            "description": "The assignment's open pause period, or null when none is open",
        },
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "updated_at": {"$ref": "#/components/schemas/Timestamp"},
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn person_medication_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "person_id": {
                "allOf": [resource_ref_schema()],
                "description": "The person, numeric or portable id; cannot change after creation",
            },
            "medication_id": {
                "allOf": [resource_ref_schema()],
                "description": "A medication of the household, numeric or portable id",
            },
            "source_dosage_option_id": {
                "anyOf": [resource_ref_schema(), {"type": "null"}],
                "description": "A dosage option of the medication; its defaults fill the dose attributes the body leaves out",
            },
            "dose_amount": {"allOf": [decimal::positive_schema()],
                "description": "Defaults to the dosage option's amount, else the medication's dose_amount"},
            "dose_unit": {"allOf": [DoseUnit::schema()],
                "description": "Defaults to the dosage option's unit, else the medication's dose_unit"},
            "dose_cycle": {"allOf": [DoseCycle::schema()], "default": "daily"},
            "max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
            "min_hours_between_doses": nullable(decimal::non_negative_schema()),
            "administration_kind": {"allOf": [AdministrationKind::schema()], "default": "routine"},
            "notes": nullable(json!({"type": "string", "maxLength": 2000})),
        },
    })
}

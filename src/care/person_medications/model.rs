//! Person medication (direct assignment) API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::care::plan::AdministrationKind;
use crate::care::plan::{AssignmentPlan, PERSON_MEDICATION, Planned};
use crate::care::schedules::model::{DailyDoses, Dose, DoseAttributes, SourceNotes};
use crate::care::source_row::Sourced;
use crate::decimal::{NonNegativeDecimal, PositiveDecimal};
use crate::domain::vocabulary;
use crate::domain::{AtLeast, ResourceId, Timestamp, present};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// A direct assignment as stored.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "PersonMedication")]
pub struct PersonMedicationRow {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    #[serde(flatten)]
    pub dose: Dose,
    pub administration_kind: AdministrationKind,
    /// False while the assignment is paused
    pub active: bool,
    pub notes: Option<String>,
    /// Order among the person's assignments; unique per person
    pub position: i64,
    pub retired_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

/// A direct assignment as sent, with its open pause period.
pub type PersonMedication = Sourced<PersonMedicationRow>;

/// Assignment attributes; absent fields are left alone (PATCH) or take
/// their defaults (POST, PUT); null clears where null is allowed.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonMedicationAttributes {
    /// The person, numeric or portable id; cannot change after creation
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ResourceId")]
    pub person_id: Option<Option<ResourceId>>,
    /// A medication of the household, numeric or portable id
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ResourceId")]
    pub medication_id: Option<Option<ResourceId>>,
    /// A dosage option of the medication; its defaults fill the dose attributes the body leaves out
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<ResourceId>")]
    pub source_dosage_option_id: Option<Option<ResourceId>>,
    /// Defaults to the dosage option's amount, else the medication's dose_amount
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "PositiveDecimal")]
    pub dose_amount: Option<Option<PositiveDecimal>>,
    /// Defaults to the dosage option's unit, else the medication's dose_unit
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "DoseUnit")]
    pub dose_unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "DoseCycle", extend("default" = "daily"))]
    pub dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<DailyDoses>")]
    pub max_daily_doses: Option<Option<DailyDoses>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub min_hours_between_doses: Option<Option<NonNegativeDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "AdministrationKind", extend("default" = "routine"))]
    pub administration_kind: Option<Option<AdministrationKind>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SourceNotes>")]
    pub notes: Option<Option<SourceNotes>>,
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
            max_daily_doses: self.max_daily_doses.take().map(|n| n.map(AtLeast::get)),
            min_hours_between_doses: self.min_hours_between_doses.take(),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PersonMedicationUpdateRequest")]
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

vocabulary!(
    /// Which way an assignment moves among its person's assignments: up
    /// towards the start (a lower position), down towards the end.
    Direction {
        Up => "up",
        Down => "down",
    }
);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PersonMedicationReorderRequest")]
pub struct ReorderBody {
    /// up: swap with the assignment before it; down: with the one after it
    pub direction: Direction,
}

impl From<&PersonMedicationRow> for AssignmentPlan {
    fn from(row: &PersonMedicationRow) -> AssignmentPlan {
        AssignmentPlan {
            administration_kind: row.administration_kind,
            dose_amount: row.dose.dose_amount,
            dose_unit: row.dose.dose_unit,
            dose_cycle: row.dose.dose_cycle,
            max_daily_doses: row.dose.max_daily_doses,
            min_hours_between_doses: row.dose.min_hours_between_doses,
        }
    }
}

impl Planned for PersonMedicationRow {
    const SUBJECT: &'static str = PERSON_MEDICATION;
    fn plan(&self) -> Value {
        serde_json::to_value(AssignmentPlan::from(self)).unwrap_or(Value::Null)
    }
}

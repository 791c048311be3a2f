//! Person medication (direct assignment) API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::care::plan::AdministrationKind;
use crate::care::plan::{AssignmentPlan, PERSON_MEDICATION, Planned};
use crate::care::source_row::Sourced;
use crate::care::sources::model::{SourceHead, SourceStamps, source_attributes};
use crate::domain::present;
use crate::domain::vocabulary;
use crate::http::replace::Whole;

/// A direct assignment as stored.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "PersonMedication")]
pub struct PersonMedicationRow {
    #[serde(flatten)]
    pub source: SourceHead,
    pub administration_kind: AdministrationKind,
    /// False while the assignment is paused
    pub active: bool,
    pub notes: Option<String>,
    /// Order among the person's assignments; unique per person
    pub position: i64,
    #[serde(flatten)]
    pub stamps: SourceStamps,
}

/// A direct assignment as sent, with its open pause period.
pub type PersonMedication = Sourced<PersonMedicationRow>;

source_attributes! {
    /// Assignment attributes; absent fields are left alone (PATCH) or take
    /// their defaults (POST, PUT); null clears where null is allowed.
    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct PersonMedicationAttributes {
        after_unit {}
        own {
            #[serde(default, deserialize_with = "present")]
            #[schemars(with = "AdministrationKind", extend("default" = "routine"))]
            pub administration_kind: Option<Option<AdministrationKind>>,
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
            dose_amount: row.source.dose.dose_amount,
            dose_unit: row.source.dose.dose_unit,
            dose_cycle: row.source.dose.dose_cycle,
            max_daily_doses: row.source.dose.max_daily_doses,
            min_hours_between_doses: row.source.dose.min_hours_between_doses,
        }
    }
}

impl Planned for PersonMedicationRow {
    const SUBJECT: &'static str = PERSON_MEDICATION;
    fn plan(&self) -> Value {
        serde_json::to_value(AssignmentPlan::from(self)).unwrap_or(Value::Null)
    }
}

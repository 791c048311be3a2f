//! Schedule API shapes.

use jiff::civil::Date;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::dose::{Dose, DoseAttributes};
use crate::care::schedule_config;
use crate::care::sources::Sourced;
use crate::decimal::{self, Dec};
use crate::domain::{ResourceId, present, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::http::replace::Whole;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

/// A schedule as stored. `schedule_config` is the normalised JSON of a
/// config checked against `schedule_type`: `schedule_config::parse` turns it
/// back into the typed `ScheduleConfig`.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    #[serde(flatten)]
    pub dose: Dose,
    pub frequency: Option<String>,
    pub schedule_type: ScheduleType,
    pub schedule_config: Value,
    pub start_date: Date,
    pub end_date: Option<Date>,
    /// False while paused.
    pub active: bool,
    pub notes: Option<String>,
    pub retired_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

/// A schedule as sent, with its open pause period.
pub type Schedule = Sourced<ScheduleRow>;

/// Schedule attributes; absent fields are left alone (PATCH) or take their
/// defaults (POST, PUT); null clears where null is allowed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleAttributes {
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
    pub frequency: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    pub max_daily_doses: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    pub min_hours_between_doses: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub schedule_type: Option<Option<ScheduleType>>,
    #[serde(default, deserialize_with = "present")]
    pub schedule_config: Option<Option<Value>>,
    #[serde(default, deserialize_with = "present")]
    pub start_date: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub end_date: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub notes: Option<Option<String>>,
}

impl ScheduleAttributes {
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
pub struct ScheduleBody {
    pub schedule: ScheduleAttributes,
}

/// A replace carries every writable attribute.
impl Whole for ScheduleBody {
    const KEY: &'static str = "schedule";
    const FIELDS: &'static [&'static str] = &[
        "medication_id",
        "source_dosage_option_id",
        "dose_amount",
        "dose_unit",
        "frequency",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "schedule_type",
        "schedule_config",
        "start_date",
        "end_date",
        "notes",
    ];
}

const CONFIG_RULES: &str = "What each schedule_type needs in schedule_config: daily and \
every_other_day (counted from start_date) at least one time or slot; multiple_daily at least two \
times and slots in total; weekly at least one weekday and a time or slot; specific_dates at least \
one date and a time or slot; tapering at least one taper step (in date order, each starting the \
day after the one before ends; a step without times uses the schedule's times and slots); prn \
nothing (as_needed is always true; times are refused). weekdays, dates and taper_steps are \
refused on other types. The plan must also hold together (422 naming the field): end_date is \
inclusive (the last day with doses) and dates and taper steps lie within start_date..end_date; \
every slot resolves to a time in the person's notification preferences; a taper step's dose_unit, \
when given, is the schedule's; max_daily_doses (and a step's own) is not below the doses the plan \
itself gives in every dose cycle (daily: its times per day; weekly and monthly cycles count the \
days the pattern is sure to have in any week, or in 28 days).";

pub fn schedule_schema() -> Value {
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
        "frequency": nullable(json!({"type": "string"})),
        "dose_cycle": nullable(DoseCycle::schema()),
        "max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
        "min_hours_between_doses": nullable(decimal::non_negative_schema()),
        "schedule_type": ScheduleType::schema(),
        "schedule_config": schedule_config::schema(),
        "start_date": {"$ref": "#/components/schemas/Date"},
        "end_date": nullable(json!({"$ref": "#/components/schemas/Date"})),
        "active": {"type": "boolean", "description": "False while the schedule is paused"},
        "notes": nullable(json!({"type": "string"})),
        "retired_at": nullable(json!({"$ref": "#/components/schemas/Timestamp"})),
        "current_pause_period": {
            "anyOf": [{"$ref": "#/components/schemas/MedicationPausePeriod"}, {"type": "null"}],
            "description": "The schedule's open pause period, or null when none is open",
        },
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "updated_at": {"$ref": "#/components/schemas/Timestamp"},
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required,
        "description": CONFIG_RULES, "properties": props})
}

pub fn schedule_attributes_schema(required: &[&str]) -> Value {
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
            "frequency": nullable(json!({"type": "string", "maxLength": 200})),
            "dose_cycle": {"allOf": [DoseCycle::schema()], "default": "daily"},
            "max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
            "min_hours_between_doses": nullable(decimal::non_negative_schema()),
            "schedule_type": {"allOf": [ScheduleType::schema()],
                "description": "Defaults to the medication's default_schedule_type"},
            "schedule_config": schedule_config::schema(),
            "start_date": {"$ref": "#/components/schemas/Date"},
            "end_date": nullable(json!({"$ref": "#/components/schemas/Date"})),
            "notes": nullable(json!({"type": "string", "maxLength": 2000})),
        },
    })
}

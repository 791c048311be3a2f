//! Schedule API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::care::plan::{Planned, SCHEDULE, SchedulePlan};
use crate::care::schedule_config::ScheduleConfig;
use crate::care::source_row::Sourced;
use crate::decimal::{Dec, NonNegativeDecimal, PositiveDecimal};
use crate::domain::{AtLeast, ResourceId, Text, Timestamp, present};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

/// The dose fields as stored and sent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Dose {
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub source_dosage_option_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub source_dosage_option_portable_id: Option<String>,
    #[schemars(with = "PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    #[schemars(range(min = 1))]
    pub max_daily_doses: Option<i64>,
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub min_hours_between_doses: Option<Dec>,
}

impl Dose {
    /// A dose before any attributes are applied; `settle` requires the
    /// medication, amount and unit, so these values never reach storage.
    pub fn placeholder() -> Dose {
        Dose {
            medication_id: 0,
            medication_portable_id: String::new(),
            source_dosage_option_id: None,
            source_dosage_option_portable_id: None,
            dose_amount: Dec::ZERO,
            dose_unit: DoseUnit::Tablet,
            dose_cycle: None,
            max_daily_doses: None,
            min_hours_between_doses: None,
        }
    }
}

/// The submitted dose attributes: absent (`None`), null (`Some(None)`) or a value.
#[derive(Debug, Default)]
pub struct DoseAttributes {
    pub medication_id: Option<Option<ResourceId>>,
    pub source_dosage_option_id: Option<Option<ResourceId>>,
    pub dose_amount: Option<Option<PositiveDecimal>>,
    pub dose_unit: Option<Option<DoseUnit>>,
    pub dose_cycle: Option<Option<DoseCycle>>,
    pub max_daily_doses: Option<Option<i64>>,
    pub min_hours_between_doses: Option<Option<NonNegativeDecimal>>,
}

/// How many doses a dose cycle allows: at least 1.
pub type DailyDoses = AtLeast<1>;
/// A schedule's frequency note: at most 200 characters.
pub type Frequency = Text<200>;
/// A schedule's or direct assignment's notes: at most 2000 characters.
pub type SourceNotes = Text<2000>;

/// A schedule as stored. `schedule_config` is the normalised JSON of a
/// config checked against `schedule_type`: `schedule_config::parse` turns it
/// back into the typed `ScheduleConfig`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Schedule", extend("description" = CONFIG_RULES))]
pub struct ScheduleRow {
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
    pub frequency: Option<String>,
    pub schedule_type: ScheduleType,
    #[schemars(with = "ScheduleConfig")]
    pub schedule_config: Value,
    #[schemars(with = "openapi::Date")]
    pub start_date: Date,
    #[schemars(with = "Option<openapi::Date>")]
    pub end_date: Option<Date>,
    /// False while the schedule is paused
    pub active: bool,
    pub notes: Option<String>,
    pub retired_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

/// A schedule as sent, with its open pause period.
pub type Schedule = Sourced<ScheduleRow>;

/// Schedule attributes; absent fields are left alone (PATCH) or take their
/// defaults (POST, PUT); null clears where null is allowed.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleAttributes {
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
    #[schemars(with = "Option<Frequency>")]
    pub frequency: Option<Option<Frequency>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "DoseCycle", extend("default" = "daily"))]
    pub dose_cycle: Option<Option<DoseCycle>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<DailyDoses>")]
    pub max_daily_doses: Option<Option<DailyDoses>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub min_hours_between_doses: Option<Option<NonNegativeDecimal>>,
    /// Defaults to the medication's default_schedule_type
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ScheduleType")]
    pub schedule_type: Option<Option<ScheduleType>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ScheduleConfig")]
    pub schedule_config: Option<Option<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "openapi::Date")]
    pub start_date: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::Date>")]
    pub end_date: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SourceNotes>")]
    pub notes: Option<Option<SourceNotes>>,
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
            max_daily_doses: self.max_daily_doses.take().map(|n| n.map(AtLeast::get)),
            min_hours_between_doses: self.min_hours_between_doses.take(),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ScheduleUpdateRequest")]
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

impl From<&ScheduleRow> for SchedulePlan {
    fn from(row: &ScheduleRow) -> SchedulePlan {
        SchedulePlan {
            schedule_type: row.schedule_type,
            schedule_config: row.schedule_config.clone(),
            start_date: row.start_date,
            end_date: row.end_date,
            dose_amount: row.dose.dose_amount,
            dose_unit: row.dose.dose_unit,
            dose_cycle: row.dose.dose_cycle,
            max_daily_doses: row.dose.max_daily_doses,
            min_hours_between_doses: row.dose.min_hours_between_doses,
            read_config: Default::default(),
        }
    }
}

impl Planned for ScheduleRow {
    const SUBJECT: &'static str = SCHEDULE;
    fn plan(&self) -> Value {
        serde_json::to_value(SchedulePlan::from(self)).unwrap_or(Value::Null)
    }
}

//! Schedule API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::care::plan::{Planned, SCHEDULE, SchedulePlan};
use crate::care::schedule_config::ScheduleConfig;
use crate::care::source_row::Sourced;
use crate::care::sources::model::{SourceHead, SourceStamps, source_attributes};
use crate::domain::{Text, present};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::medicine::vocab::ScheduleType;

pub use crate::care::sources::model::{DailyDoses, Dose, DoseAttributes, SourceNotes};

/// A schedule's frequency note: at most 200 characters.
pub type Frequency = Text<200>;

/// A schedule as stored. `schedule_config` is the normalised JSON of a
/// config checked against `schedule_type`: `schedule_config::parse` turns it
/// back into the typed `ScheduleConfig`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Schedule", extend("description" = CONFIG_RULES))]
pub struct ScheduleRow {
    #[serde(flatten)]
    pub source: SourceHead,
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
    #[serde(flatten)]
    pub stamps: SourceStamps,
}

/// A schedule as sent, with its open pause period.
pub type Schedule = Sourced<ScheduleRow>;

source_attributes! {
    /// Schedule attributes; absent fields are left alone (PATCH) or take their
    /// defaults (POST, PUT); null clears where null is allowed.
    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ScheduleAttributes {
        after_unit {
            #[serde(default, deserialize_with = "present")]
            #[schemars(with = "Option<Frequency>")]
            pub frequency: Option<Option<Frequency>>,
        }
        own {
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
            dose_amount: row.source.dose.dose_amount,
            dose_unit: row.source.dose.dose_unit,
            dose_cycle: row.source.dose.dose_cycle,
            max_daily_doses: row.source.dose.max_daily_doses,
            min_hours_between_doses: row.source.dose.min_hours_between_doses,
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

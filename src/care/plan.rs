//! What of a dose source the expected-dose projection depends on: the part
//! of a schedule or direct assignment whose changes the plan history keeps
//! (`dose_occurrences::history`). Beside the rows rather than in the
//! history, so the rows' modules and the history need not import each other.

use std::cell::OnceCell;

use jiff::civil::Date;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::care::schedule_config::{self, ScheduleConfig};
use crate::decimal::Dec;
use crate::domain::vocabulary;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

pub const SCHEDULE: &str = "schedule";
pub const PERSON_MEDICATION: &str = "person_medication";

vocabulary!(
    /// Whether an assignment is taken on a routine or only when needed.
    /// As-needed assignments have no expected doses and never count in
    /// routine totals.
    AdministrationKind {
        Routine => "routine",
        AsNeeded => "as_needed",
    }
);

/// What of a schedule the projection depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulePlan {
    pub schedule_type: ScheduleType,
    pub schedule_config: Value,
    pub start_date: Date,
    pub end_date: Option<Date>,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
    /// `schedule_config` as `schedule_config::parse` reads it, read once:
    /// a kept plan is projected on every read of a day.
    #[serde(skip)]
    pub read_config: ReadConfig,
}

impl SchedulePlan {
    /// The config, or `None` when it does not parse.
    pub fn config(&self) -> Option<&ScheduleConfig> {
        self.read_config
            .0
            .get_or_init(|| schedule_config::parse(self.schedule_type, &self.schedule_config).ok())
            .as_ref()
    }
}

/// A schedule plan's config once read; worked out from the plan's other
/// fields, so two plans are equal whatever either has read yet.
#[derive(Clone, Default)]
pub struct ReadConfig(OnceCell<Option<ScheduleConfig>>);

impl PartialEq for ReadConfig {
    fn eq(&self, _: &ReadConfig) -> bool {
        true
    }
}

impl std::fmt::Debug for ReadConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadConfig")
    }
}

/// What of a direct assignment the projection depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssignmentPlan {
    pub administration_kind: AdministrationKind,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
}

/// A dose source whose plan has a history.
pub trait Planned {
    /// The `plan_revisions.subject_type` of its revisions.
    const SUBJECT: &'static str;
    fn plan(&self) -> Value;
}

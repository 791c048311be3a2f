//! What a take of one source is judged against that only a change to the
//! care plan moves: the source and its person, the household's time zone,
//! whether the schedule's plan was ever revised, the source's pause periods
//! and the largest minimum gap of the person's other sources of the
//! medication. Kept on the writer between takes under the plan stamp
//! (`db::kept_with_plan`): a household's round of doses records the same
//! few sources again and again, and reading these for every dose was a
//! fifth of the writer's work on a take.

use std::rc::Rc;

use jiff::tz::TimeZone;
use rusqlite::Connection;

use super::model::SourceType;
use super::store::{self, Source};
use crate::care::dose_occurrences::history::Revisions;
use crate::decimal::Dec;
use crate::domain::ResourceId;
use crate::error::Result;

pub(super) struct SourcePlan {
    pub source: Source,
    pub tz: TimeZone,
    /// A schedule whose plan was revised at least once (a direct
    /// assignment's never is: it has no plan history).
    pub revised: bool,
    /// The largest min_hours_between_doses among the person's other
    /// sources of the medication, retired ones included.
    pub others_max_min_hours: Option<Dec>,
    pauses: Vec<store::PausePeriod>,
}

impl SourcePlan {
    /// Whether a pause period of the source covers `at` (stored text, as
    /// the periods' own: text order is time order).
    pub fn paused_at(&self, at: &str) -> bool {
        self.pauses.iter().any(|p| p.covers(at))
    }
}

/// The plan of the household's schedule or assignment `id`, retired ones
/// included; `None` when there is none.
pub(super) fn find(
    conn: &Connection,
    household_id: i64,
    source_type: SourceType,
    id: &ResourceId,
) -> Result<Option<Rc<SourcePlan>>> {
    let kept = crate::db::kept_with_plan(
        conn,
        (household_id, source_type, id.clone()),
        || -> Result<_> {
            let Some(source) = store::find_source(conn, household_id, source_type, id)? else {
                return Ok(None);
            };
            let revised = source.source_type == SourceType::Schedule
                && Revisions::schedule_was_revised(conn, household_id, source.id)?;
            Ok(Some(Rc::new(SourcePlan {
                tz: crate::household::store::time_zone(conn, household_id)?,
                revised,
                others_max_min_hours: store::other_sources_max_min_hours(conn, &source)?,
                pauses: store::pause_periods(conn, source.source_type, source.id)?,
                source,
            })))
        },
    )?;
    Ok(Option::clone(&kept))
}

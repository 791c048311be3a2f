//! The warnings of a recorded take: the safety limits it went past, doses of
//! the same medicine under the person's other sources, and doses given
//! outside the plan (before its start, after its end, while paused). Never a
//! refusal: the dose was given.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp};
use rusqlite::Connection;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::model::{MedicationTake, Warning, WarningCode};
use super::source_plan::SourcePlan;
use super::store::{self, Source};
use super::{Planned, midnight, planned_for, timestamp};
use crate::decimal::Dec;
use crate::error::{ApiError, Result};
use crate::medicine::vocab::DoseCycle;

/// The [start, end) of the dose-cycle window containing `at`: its day, ISO
/// week or month in the household time zone.
fn window(at: Timestamp, tz: &TimeZone, cycle: DoseCycle) -> Result<(Timestamp, Timestamp)> {
    let date = at.to_zoned_datetime(tz.clone()).date();
    let bad = |e: jiff::Error| ApiError::internal(format!("dose-cycle window: {e}"));
    let (start, end): (Date, Date) = match cycle {
        DoseCycle::Daily => (date, date.checked_add(Span::new().days(1)).map_err(bad)?),
        DoseCycle::Weekly => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            let start = date.checked_sub(Span::new().days(back)).map_err(bad)?;
            (start, start.checked_add(Span::new().days(7)).map_err(bad)?)
        }
        DoseCycle::Monthly => {
            let start = date.first_of_month();
            (
                start,
                start.checked_add(Span::new().months(1)).map_err(bad)?,
            )
        }
    };
    Ok((midnight(tz, start)?, midnight(tz, end)?))
}

fn period(cycle: DoseCycle) -> &'static str {
    match cycle {
        DoseCycle::Daily => "day",
        DoseCycle::Weekly => "week",
        DoseCycle::Monthly => "month",
    }
}

/// Whole seconds in a number of hours.
fn hours_to_duration(hours: Dec) -> SignedDuration {
    let secs = (hours.0 * Decimal::from(3600))
        .round()
        .to_i64()
        .unwrap_or(i64::MAX);
    SignedDuration::from_secs(secs)
}

fn duration_to_hours(d: SignedDuration) -> Dec {
    Dec((Decimal::from(d.as_secs()) / Decimal::from(3600))
        .round_dp(2)
        .normalize())
}

/// The warnings of a take, judged against the takes recorded up to it (so
/// a replay answers as the first time did), and, for as-needed sources,
/// when the next dose is allowed. The limits are those the source calls
/// for on the day of taken_at (a taper step's own); takes of the same
/// medication for the same person under other sources count too.
/// `planned` is what the source calls for at taken_at, when already known;
/// `plan` is the source's as kept (`source_plan`), the household's id
/// beside it.
pub(super) fn warnings(
    conn: &Connection,
    household_id: i64,
    plan: &SourcePlan,
    take: &MedicationTake,
    planned: Option<Planned>,
) -> Result<(Vec<Warning>, Option<crate::domain::Timestamp>)> {
    let taken_at = take.taken_at.to_jiff();
    let planned = match planned {
        Some(planned) => planned,
        None => planned_for(conn, household_id, plan, taken_at, None)?,
    };
    let source = &plan.source;
    let judged = Judged {
        conn,
        tz: plan.tz.clone(),
        cycle: source.dose_cycle.unwrap_or(DoseCycle::Daily),
        plan,
        source,
        take,
        taken_at,
        max_doses: planned.max_daily_doses,
        min_gap: planned
            .min_hours_between_doses
            .filter(|h| h.is_positive())
            .map(hours_to_duration),
        others: store::OtherSources {
            person_id: source.person_id,
            medication_id: source.medication_id,
            source_type: source.source_type,
            source_id: source.id,
            take_id: take.id,
        },
    };
    let mut warnings = Vec::new();
    warnings.extend(judged.too_many()?);
    warnings.extend(judged.too_soon()?);
    warnings.extend(judged.too_soon_after_other_sources()?);
    warnings.extend(judged.outside_plan()?);
    let next = judged.next_dose_allowed()?;
    Ok((warnings, next.map(crate::domain::Timestamp::from_jiff)))
}

/// A take and the limits it is judged against.
struct Judged<'a> {
    conn: &'a Connection,
    tz: TimeZone,
    cycle: DoseCycle,
    plan: &'a SourcePlan,
    source: &'a Source,
    take: &'a MedicationTake,
    taken_at: Timestamp,
    max_doses: Option<i64>,
    min_gap: Option<SignedDuration>,
    others: store::OtherSources,
}

impl Judged<'_> {
    /// Takes in the dose-cycle window containing `at`: this source's, and
    /// the other sources' of the same medication for the person; and the
    /// window's end.
    fn count_around(&self, at: Timestamp) -> Result<(i64, i64, Timestamp)> {
        let (start, end) = window(at, &self.tz, self.cycle)?;
        let (start, end_text) = (
            crate::domain::Timestamp::from_jiff(start),
            crate::domain::Timestamp::from_jiff(end),
        );
        let own = store::count_in_window(
            self.conn,
            self.source.source_type,
            self.source.id,
            &start,
            &end_text,
            self.take.id,
        )?;
        let other =
            store::count_other_sources_in_window(self.conn, &self.others, &start, &end_text)?;
        Ok((own, other, end))
    }

    /// More doses in the take's dose-cycle window than the limit.
    fn too_many(&self) -> Result<Option<Warning>> {
        let Some(max) = self.max_doses else {
            return Ok(None);
        };
        let (own, other, _) = self.count_around(self.taken_at)?;
        let count = own + other;
        if count <= max {
            return Ok(None);
        }
        let under_others = if other > 0 {
            format!(" ({other} of them under other sources of this medication)")
        } else {
            String::new()
        };
        Ok(Some(Warning {
            code: WarningCode::MaxDailyDosesExceeded,
            message: format!(
                "{count} doses recorded in this {}{under_others}; the limit is {max}",
                period(self.cycle)
            ),
        }))
    }

    /// Another take of this source closer than the minimum gap.
    fn too_soon(&self) -> Result<Option<Warning>> {
        let Some(min_gap) = self.min_gap else {
            return Ok(None);
        };
        let (before, after) = store::neighbours(
            self.conn,
            self.source.source_type,
            self.source.id,
            self.take.taken_at.as_str(),
            self.take.id,
        )?;
        let mut closest: Option<SignedDuration> = None;
        for other in before.iter().chain(after.iter()) {
            let gap = self.taken_at.duration_since(timestamp(other)?).abs();
            closest = Some(closest.map_or(gap, |c| c.min(gap)));
        }
        Ok(closest.filter(|gap| *gap < min_gap).map(|gap| Warning {
            code: WarningCode::MinHoursBetweenDoses,
            message: format!(
                "another dose was recorded {} hours from this one; at least {} hours should pass between doses",
                duration_to_hours(gap),
                duration_to_hours(min_gap)
            ),
        }))
    }

    /// A take of the medication under another source closer than the
    /// larger of the two sources' gaps.
    fn too_soon_after_other_sources(&self) -> Result<Option<Warning>> {
        let close = too_close_to_other_sources(
            self.conn,
            &self.others,
            self.taken_at,
            (self.horizon(), self.min_gap),
        )?;
        Ok(close.map(|(gap, limit)| Warning {
            code: WarningCode::MinHoursBetweenDosesOtherSource,
            message: format!(
                "a dose of the same medication under another source was recorded {} hours from this one; at least {} hours should pass between doses",
                duration_to_hours(gap),
                duration_to_hours(limit)
            ),
        }))
    }

    /// A dose given before the schedule's start, after its end, or while
    /// its source was paused.
    fn outside_plan(&self) -> Result<Vec<Warning>> {
        let taken_on = self.taken_at.to_zoned_datetime(self.tz.clone()).date();
        let date = |text: &Option<String>| text.as_deref().and_then(|d| d.parse::<Date>().ok());
        let mut warnings = Vec::new();
        if date(&self.source.start_date).is_some_and(|start| taken_on < start) {
            warnings.push(Warning {
                code: WarningCode::BeforeStartDate,
                message: "this dose was given before the schedule's start_date".into(),
            });
        }
        if date(&self.source.end_date).is_some_and(|end| taken_on > end) {
            warnings.push(Warning {
                code: WarningCode::AfterEndDate,
                message: "this dose was given after the schedule's end_date".into(),
            });
        }
        if self.plan.paused_at(self.take.taken_at.as_str()) {
            warnings.push(Warning {
                code: WarningCode::SourcePaused,
                message: "this dose was given while its source was paused".into(),
            });
        }
        Ok(warnings)
    }

    /// The widest gap that can apply between the take and one of the same
    /// medication under another source: the larger of this source's and
    /// the largest of the others'. None when no source sets one.
    fn horizon(&self) -> Option<SignedDuration> {
        self.plan
            .others_max_min_hours
            .and_then(positive_gap)
            .max(self.min_gap)
    }

    /// For an as-needed source, when the next dose is allowed after its
    /// latest take: the minimum gap after it, after the takes of the
    /// medication under other sources, and the end of a full dose-cycle
    /// window, whichever is latest.
    fn next_dose_allowed(&self) -> Result<Option<Timestamp>> {
        if !self.source.as_needed {
            return Ok(None);
        }
        let Some(latest) = store::latest_taken_at(
            self.conn,
            self.source.source_type,
            self.source.id,
            self.take.id,
        )?
        else {
            return Ok(None);
        };
        let latest = timestamp(&latest)?;
        let mut next = self.min_gap.map(|min_gap| latest + min_gap);
        // A dose of the medicine under another source holds the next one
        // back as well, by the larger of the two gaps.
        if let Some(horizon) = self.horizon() {
            let since = latest.checked_sub(horizon).unwrap_or(Timestamp::MIN);
            for (at, their_hours) in store::other_sources_between(
                self.conn,
                &self.others,
                &crate::domain::Timestamp::from_jiff(since),
                &crate::domain::Timestamp::from_jiff(Timestamp::MAX),
            )? {
                if let Some(limit) = their_hours.and_then(positive_gap).max(self.min_gap) {
                    let until = timestamp(&at)?.checked_add(limit).unwrap_or(Timestamp::MAX);
                    next = Some(next.map_or(until, |n: Timestamp| n.max(until)));
                }
            }
        }
        if let Some(max) = self.max_doses {
            let (own, other, end) = self.count_around(latest)?;
            if own + other >= max {
                next = Some(next.map_or(end, |n: Timestamp| n.max(end)));
            }
        }
        Ok(next)
    }
}

/// A min_hours_between_doses as a gap; none when it is not positive.
fn positive_gap(hours: Dec) -> Option<SignedDuration> {
    hours.is_positive().then(|| hours_to_duration(hours))
}

/// The closest take of the same medication under another source that came
/// within the minimum gap, with that gap and the limit it broke. Of the two
/// sources' min_hours_between_doses the larger applies, so the warning does
/// not depend on which of the two doses was recorded second. `horizon` is
/// the widest such gap, `own_gap` this source's.
fn too_close_to_other_sources(
    conn: &Connection,
    others: &store::OtherSources,
    taken_at: Timestamp,
    (horizon, own_gap): (Option<SignedDuration>, Option<SignedDuration>),
) -> Result<Option<(SignedDuration, SignedDuration)>> {
    let Some(horizon) = horizon else {
        return Ok(None);
    };
    let reach = |at: Option<Timestamp>, bound: Timestamp| at.unwrap_or(bound);
    let from = reach(taken_at.checked_sub(horizon).ok(), Timestamp::MIN);
    let until = reach(taken_at.checked_add(horizon).ok(), Timestamp::MAX);
    let mut closest: Option<(SignedDuration, SignedDuration)> = None;
    for (at, their_hours) in store::other_sources_between(
        conn,
        others,
        &crate::domain::Timestamp::from_jiff(from),
        &crate::domain::Timestamp::from_jiff(until),
    )? {
        let gap = taken_at.duration_since(timestamp(&at)?).abs();
        let Some(limit) = their_hours.and_then(positive_gap).max(own_gap) else {
            continue;
        };
        if gap < limit && closest.is_none_or(|(c, _)| gap < c) {
            closest = Some((gap, limit));
        }
    }
    Ok(closest)
}

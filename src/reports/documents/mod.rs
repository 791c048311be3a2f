//! The two reports of one person, as JSON and as PDF: the health history
//! (medicines, pauses, takes when asked for, health events and reviews
//! over at most 366 days; manage access to the person) and the medication
//! reviews (view access plus the adult review permission). Reports are
//! reads; each successful download is then audited, and a download whose
//! rendering or audit fails is a 503 `report_unavailable`.

pub mod model;
pub mod pdf;
pub mod routes;
pub mod store;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::Connection;
use serde_json::Value;

use crate::auth::{AccessLevel, Actor, access};
use crate::db::WriteTx;
use crate::domain::{ResourceId, Timestamp};
use crate::error::{ApiError, Result};
use crate::household::{audit, people};
use crate::reports::review_prompts::{self, model::ReviewStatus};
use model::{HealthHistoryReport, MedicationReviewsReport, ReportMedicine, ReportPerson};

/// The longest period a health history covers.
pub const MAX_SPAN_DAYS: i32 = 366;
/// The audit event of a successful report download.
pub const REPORT_DOWNLOADED: &str = "report.downloaded";
pub const REPORT_UNAVAILABLE: &str = "report_unavailable";

/// The 503 of a report that could not be rendered or audited. The cause
/// is logged without the report's content.
pub fn unavailable(cause: impl std::fmt::Display) -> ApiError {
    tracing::error!(
        request_id = %crate::domain::request_id::current(),
        "report unavailable: {cause}"
    );
    ApiError::Unavailable {
        code: REPORT_UNAVAILABLE,
        message: "the report could not be produced right now; try again later".into(),
    }
}

/// Which report, for the audit trail.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    HealthHistory,
    MedicationReviews,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::HealthHistory => "health_history",
            Kind::MedicationReviews => "medication_reviews",
        }
    }
}

/// What a health history covers.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    pub person_id: ResourceId,
    pub start_date: Option<Date>,
    pub end_date: Option<Date>,
    pub include_medication_takes: bool,
}

fn zone(name: &str) -> TimeZone {
    TimeZone::get(name).unwrap_or(TimeZone::UTC)
}

/// A stored moment as the household's local "YYYY-MM-DD HH:MM".
pub fn local(at: &Timestamp, tz: &TimeZone) -> String {
    at.to_jiff()
        .to_zoned_datetime(tz.clone())
        .strftime("%Y-%m-%d %H:%M")
        .to_string()
}

/// The first moment of a local date.
fn start_of(date: Date, tz: &TimeZone) -> Result<Timestamp> {
    let at = tz
        .to_ambiguous_timestamp(date.to_datetime(jiff::civil::Time::midnight()))
        .compatible()
        .map_err(ApiError::internal)?;
    Ok(Timestamp::from_jiff(at))
}

/// The period, defaulting to the 365 days up to today in the household
/// time zone; 422 when the end is before the start or the span is longer
/// than 366 days.
pub fn period(query: &HistoryQuery, tz: &TimeZone) -> Result<(Date, Date)> {
    let today = jiff::Timestamp::now().to_zoned_datetime(tz.clone()).date();
    let end = query.end_date.unwrap_or(today);
    let start = match query.start_date {
        Some(start) => start,
        None => end
            .checked_sub(jiff::Span::new().days(365))
            .map_err(ApiError::internal)?,
    };
    check_span(start, end)?;
    Ok((start, end))
}

/// 422 unless start ≤ end and end is at most 366 days after start.
pub fn check_span(start: Date, end: Date) -> Result<()> {
    if end < start {
        return Err(ApiError::invalid(
            "end_date",
            "must be on or after start_date",
        ));
    }
    let days = start.until(end).map_err(ApiError::internal)?.get_days();
    if days > MAX_SPAN_DAYS {
        return Err(ApiError::invalid(
            "end_date",
            "must be at most 366 days after start_date",
        ));
    }
    Ok(())
}

/// When a medicine is taken, in words, from its schedule's type and config.
pub fn timing(schedule_type: Option<&str>, config: &str, kind: Option<&str>) -> String {
    let Some(schedule_type) = schedule_type else {
        return match kind {
            Some("as_needed") => "as needed".into(),
            _ => "routine".into(),
        };
    };
    let config: Value = serde_json::from_str(config).unwrap_or(Value::Null);
    let list = |key: &str| -> Vec<String> {
        config[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut parts = vec![schedule_type.replace('_', " ")];
    let mut at = list("times");
    at.extend(list("slots"));
    if !at.is_empty() {
        parts.push(format!("at {}", at.join(", ")));
    }
    let weekdays = list("weekdays");
    if !weekdays.is_empty() {
        parts.push(format!("on {}", weekdays.join(", ")));
    }
    let dates = list("dates");
    if !dates.is_empty() {
        parts.push(format!("on {}", dates.join(", ")));
    }
    if let Some(steps) = config["taper_steps"].as_array() {
        parts.push(format!("{} taper steps", steps.len()));
    }
    parts.join(" ")
}

/// The person named by the query, whom the actor may reach at `needed`
/// (404 outside scope, 403 below).
fn person(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<ReportPerson> {
    let row = people::store::find(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("person"))?;
    access::require_person(conn, actor, row.id, needed)?;
    Ok(ReportPerson {
        id: row.id,
        portable_id: row.portable_id,
        name: row.name,
        date_of_birth: row.date_of_birth,
    })
}

fn medicines(conn: &Connection, person_id: i64) -> Result<Vec<ReportMedicine>> {
    Ok(store::medicines(conn, person_id)?
        .into_iter()
        .map(|(mut medicine, (schedule_type, config, _))| {
            medicine.timing = timing(
                schedule_type.as_deref(),
                &config,
                medicine.administration_kind.as_deref(),
            );
            medicine
        })
        .collect())
}

/// `getHealthHistoryReport`: manage access to the person.
pub fn health_history(
    conn: &Connection,
    actor: &Actor,
    query: &HistoryQuery,
) -> Result<HealthHistoryReport> {
    let person = person(conn, actor, &query.person_id, AccessLevel::Manage)?;
    let household = store::household(conn, actor.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?;
    let tz = zone(&household.time_zone);
    let (start, end) = period(query, &tz)?;
    let from = start_of(start, &tz)?;
    let to = start_of(end.tomorrow().map_err(ApiError::internal)?, &tz)?;
    let takes = if query.include_medication_takes {
        let mut takes = store::takes(conn, person.id, &from, &to)?;
        for take in &mut takes {
            take.taken_at_local = local(&take.taken_at, &tz);
        }
        Some(takes)
    } else {
        None
    };
    let reviews = if actor.permissions.adult_review {
        Some(
            review_prompts::store::of_person(conn, person.id, None)?
                .into_iter()
                .map(Into::into)
                .collect(),
        )
    } else {
        None
    };
    Ok(HealthHistoryReport {
        medicines: medicines(conn, person.id)?,
        pauses: store::pauses(conn, person.id, &from, &to)?,
        medication_takes: takes,
        health_events: store::health_events(conn, person.id, &start.to_string(), &end.to_string())?,
        reviews,
        period: model::ReportPeriod {
            start_date: start.to_string(),
            end_date: end.to_string(),
        },
        include_medication_takes: query.include_medication_takes,
        generated_at: Timestamp::now(),
        household,
        person,
    })
}

/// `getMedicationReviewsReport`: view access to the person and the adult
/// review permission (never implied by a role).
pub fn medication_reviews(
    conn: &Connection,
    actor: &Actor,
    person_id: &ResourceId,
    status: Option<ReviewStatus>,
) -> Result<MedicationReviewsReport> {
    let person = person(conn, actor, person_id, AccessLevel::View)?;
    if !actor.permissions.adult_review {
        return Err(ApiError::forbidden(
            "the medication reviews report needs the adult review permission",
        ));
    }
    let household = store::household(conn, actor.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?;
    Ok(MedicationReviewsReport {
        medicines: medicines(conn, person.id)?,
        reviews: review_prompts::store::of_person(conn, person.id, status)?
            .into_iter()
            .map(Into::into)
            .collect(),
        review_status: status,
        generated_at: Timestamp::now(),
        household,
        person,
    })
}

/// Records a successful download: which report, in which format, of whom.
pub fn record_download(
    conn: &WriteTx,
    actor: &Actor,
    kind: Kind,
    format: &'static str,
    person_id: i64,
) -> Result<()> {
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        REPORT_DOWNLOADED,
        ("person", person_id),
        serde_json::json!({"report": kind.as_str(), "format": format}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_over_366_days_are_refused() {
        let d = |s: &str| s.parse::<Date>().unwrap();
        assert!(check_span(d("2025-01-01"), d("2026-01-02")).is_ok());
        assert!(check_span(d("2024-01-01"), d("2025-01-01")).is_ok());
        assert!(check_span(d("2024-01-01"), d("2025-01-02")).is_err());
        assert!(check_span(d("2025-01-02"), d("2025-01-01")).is_err());
    }

    #[test]
    fn timing_reads_the_schedule() {
        assert_eq!(
            timing(Some("daily"), r#"{"times": ["08:00", "20:00"]}"#, None),
            "daily at 08:00, 20:00"
        );
        assert_eq!(timing(None, "{}", Some("as_needed")), "as needed");
    }
}

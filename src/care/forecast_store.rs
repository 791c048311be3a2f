//! SQL of the run-out forecast: every live routine source drawing on a set
//! of medications, with what the forecast needs to step through its days.

use crate::db::PrepareKept;
use jiff::civil::Date;
use rusqlite::{Connection, Row, named_params};

use crate::care::notification_preferences::slots::{self, SlotTimes};
use crate::decimal::Dec;
use crate::error::Result;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

/// A schedule's plan: its type, config, dates and the person's slot times.
#[derive(Debug, Clone)]
pub struct SchedulePlan {
    pub schedule_type: ScheduleType,
    pub config: serde_json::Value,
    pub start_date: Date,
    pub end_date: Option<Date>,
    pub slot_times: SlotTimes,
}

/// One routine source drawing on a medication's stock, or on the own stock
/// of the dosage option it was built from.
#[derive(Debug, Clone)]
pub struct DrawingSource {
    pub medication_id: i64,
    /// The medication's own dose_unit (only doses in it draw on its stock).
    pub medication_unit: Option<DoseUnit>,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    /// `None` for a routine person medication.
    pub schedule: Option<SchedulePlan>,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    /// The dosage option the source was built from, when it keeps its own
    /// stock (the source draws on that instead): its id and unit.
    pub own_stock_option: Option<(i64, DoseUnit)>,
}

fn date(text: Option<String>, column: usize) -> rusqlite::Result<Option<Date>> {
    text.map(|t| {
        t.parse().map_err(|e: jiff::Error| {
            rusqlite::Error::FromSqlConversionFailure(
                column,
                rusqlite::types::Type::Text,
                Box::new(e),
            )
        })
    })
    .transpose()
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<DrawingSource> {
    let schedule_type: Option<ScheduleType> = r.get(4)?;
    let schedule = match schedule_type {
        None => None,
        Some(schedule_type) => {
            let config: String = r.get(5)?;
            let config = serde_json::from_str(&config).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    5,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?;
            let start_date = date(r.get(6)?, 6)?.unwrap_or(Date::MIN);
            let slot_times = if r.get::<_, bool>(12)? {
                let time = |i: usize| -> rusqlite::Result<_> {
                    Ok(r.get::<_, Option<String>>(i)?
                        .as_deref()
                        .and_then(slots::parse_time))
                };
                SlotTimes {
                    morning: time(13)?,
                    afternoon: time(14)?,
                    evening: time(15)?,
                    night: time(16)?,
                }
            } else {
                SlotTimes::DEFAULT
            };
            Some(SchedulePlan {
                schedule_type,
                config,
                start_date,
                end_date: date(r.get(7)?, 7)?,
                slot_times,
            })
        }
    };
    let option: Option<i64> = r.get(10)?;
    let option_unit: Option<DoseUnit> = r.get(11)?;
    Ok(DrawingSource {
        medication_id: r.get(0)?,
        medication_unit: r.get(1)?,
        dose_amount: r.get(2)?,
        dose_unit: r.get(3)?,
        schedule,
        dose_cycle: r.get(8)?,
        max_daily_doses: r.get(9)?,
        own_stock_option: option.zip(option_unit),
    })
}

/// The sources query, with the condition choosing the schedules (alias `s`)
/// and the person medications (alias `a`).
macro_rules! drawing_sources_sql {
    ($schedules:literal, $assignments:literal) => {
        concat!(
            "SELECT s.medication_id, m.dose_unit, s.dose_amount, s.dose_unit, s.schedule_type,
                    s.schedule_config, s.start_date, s.end_date, NULL, NULL, d.id, d.unit,
                    np.id IS NOT NULL, np.morning_time, np.afternoon_time, np.evening_time,
                    np.night_time
             FROM schedules s
             JOIN medications m ON m.id = s.medication_id
             LEFT JOIN dosage_options d ON d.id = s.source_dosage_option_id
                  AND d.medication_id = s.medication_id AND d.current_supply IS NOT NULL
             LEFT JOIN notification_preferences np ON np.person_id = s.person_id
             WHERE ", $schedules, "
               AND s.retired_at IS NULL AND s.active = 1 AND s.schedule_type <> 'prn'
               AND (s.end_date IS NULL OR s.end_date >= :today)
               AND NOT EXISTS (SELECT 1 FROM medication_pause_periods p
                               WHERE p.source_type = 'schedule' AND p.source_id = s.id
                                 AND p.ended_at IS NULL)
             UNION ALL
             SELECT a.medication_id, m.dose_unit, a.dose_amount, a.dose_unit, NULL, NULL, NULL,
                    NULL, a.dose_cycle, a.max_daily_doses, d.id, d.unit, 0, NULL, NULL, NULL, NULL
             FROM person_medications a
             JOIN medications m ON m.id = a.medication_id
             LEFT JOIN dosage_options d ON d.id = a.source_dosage_option_id
                  AND d.medication_id = a.medication_id AND d.current_supply IS NOT NULL
             WHERE ", $assignments, "
               AND a.retired_at IS NULL AND a.active = 1 AND a.administration_kind = 'routine'
               AND NOT EXISTS (SELECT 1 FROM medication_pause_periods p
                               WHERE p.source_type = 'person_medication' AND p.source_id = a.id
                                 AND p.ended_at IS NULL)"
        )
    };
}

/// The live (unretired), running (not paused: `active` and no open pause
/// period), unfinished (no end before `today`) routine schedules (prn
/// excluded) and routine person medications drawing on any of
/// `medication_ids`, with each schedule's person's slot times: one query
/// for a whole page.
pub fn drawing_sources(
    conn: &Connection,
    medication_ids: &[i64],
    today: Date,
) -> Result<Vec<DrawingSource>> {
    if medication_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::from(medication_ids.to_vec()).to_string();
    let rows = conn
        .prepare_kept(drawing_sources_sql!(
            "s.medication_id IN (SELECT value FROM json_each(:ids))",
            "a.medication_id IN (SELECT value FROM json_each(:ids))"
        ))?
        .query_map(
            named_params! {":ids": ids, ":today": today.to_string()},
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The same sources for every medication of a household.
pub fn household_drawing_sources(
    conn: &Connection,
    household_id: i64,
    today: Date,
) -> Result<Vec<DrawingSource>> {
    let rows = conn
        .prepare_kept(drawing_sources_sql!(
            "s.household_id = :household",
            "a.household_id = :household"
        ))?
        .query_map(
            named_params! {":household": household_id, ":today": today.to_string()},
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

//! The planned use of stocks, from the care plan: what each live, running
//! routine source plans to use on each day of the forecast horizon, exactly
//! as `listDoseOccurrences` projects its doses (see
//! `crate::medicine::forecast` for how the days a stock lasts follow).

use std::collections::HashMap;
use std::rc::Rc;

use jiff::civil::Date;
use rusqlite::Connection;
use rust_decimal::Decimal;

use super::dose_occurrences::{self, cycle_window};
use super::forecast_store::{self, DrawingSource};
use super::schedule_config;
use super::source_row::count_live_for_medication;
use crate::error::Result;
use crate::medicine::forecast::{HORIZON_DAYS, Holder, Plan, PlannedUse};
use crate::medicine::vocab::{DoseUnit, ScheduleType};

/// Care's answer to medicine's `PlannedUse`.
pub struct CarePlan;

impl PlannedUse for CarePlan {
    /// The plan of the stocks of `medication_ids` and of their dosage
    /// options: one query for the sources (and one for today's date),
    /// however many medications. On a reader thread the plan of the whole
    /// household is made once per committed change (or new day) and kept
    /// (`crate::db::kept`): a household's plan is the same for every read
    /// until something commits or the day turns, and a phone asks often.
    fn plan(
        &self,
        conn: &Connection,
        household_id: i64,
        medication_ids: &[i64],
    ) -> Result<Rc<Plan>> {
        if medication_ids.is_empty() {
            return Ok(Rc::default());
        }
        let today = crate::household::store::today(conn, household_id)?;
        if crate::db::read_generation(conn).is_none() {
            let sources = forecast_store::drawing_sources(conn, medication_ids, today)?;
            return Ok(Rc::new(plan_of(&sources, today)));
        }
        crate::db::kept(conn, (household_id, today), || {
            let sources = forecast_store::household_drawing_sources(conn, household_id, today)?;
            Ok(plan_of(&sources, today))
        })
    }

    fn live_sources(&self, conn: &Connection, medication_id: i64) -> Result<(i64, i64)> {
        Ok((
            count_live_for_medication(conn, &super::schedules::store::TABLE, medication_id)?,
            count_live_for_medication(
                conn,
                &super::person_medications::store::TABLE,
                medication_id,
            )?,
        ))
    }
}

fn plan_of(sources: &[DrawingSource], today: Date) -> Plan {
    let mut used: HashMap<Holder, Vec<Decimal>> = HashMap::new();
    for source in sources {
        let (holder, unit) = match source.own_stock_option {
            Some((option, unit)) => (Holder::DosageOption(option), Some(unit)),
            None => (
                Holder::Medication(source.medication_id),
                source.medication_unit,
            ),
        };
        let total = used
            .entry(holder)
            .or_insert_with(|| vec![Decimal::ZERO; HORIZON_DAYS]);
        add_source(total, source, unit, today);
    }
    for days in used.values_mut() {
        let mut running = Decimal::ZERO;
        for day in days.iter_mut() {
            running = running.checked_add(*day).unwrap_or(Decimal::MAX);
            *day = running;
        }
    }
    Plan::from_running_use(used)
}

/// Adds one source's planned use per day (in `unit`, the holder's; `None`:
/// any unit) to `total`. Checked arithmetic: an absurd dose is left out,
/// never a panic.
fn add_source(total: &mut [Decimal], source: &DrawingSource, unit: Option<DoseUnit>, today: Date) {
    let counts = |dose_unit: DoseUnit| unit.is_none_or(|u| u == dose_unit);
    let add = |slot: &mut Decimal, amount: Option<Decimal>| {
        if let Some(amount) = amount {
            *slot = slot.checked_add(amount).unwrap_or(Decimal::MAX);
        }
    };
    let Some(plan) = &source.schedule else {
        if !counts(source.dose_unit) {
            return;
        }
        let doses = Decimal::from(
            source
                .max_daily_doses
                .unwrap_or(1)
                .clamp(1, dose_occurrences::MAX_POSITIONS),
        );
        let per_window = source.dose_amount.0.checked_mul(doses);
        for (i, date) in days(today).enumerate() {
            let (from, until) = cycle_window(source.dose_cycle, date);
            let length = from.until(until).map_or(1, |s| s.get_days() + 1);
            add(
                &mut total[i],
                per_window.and_then(|w| w.checked_div(Decimal::from(length))),
            );
        }
        return;
    };
    let Ok(config) = schedule_config::parse(plan.schedule_type, &plan.config) else {
        tracing::warn!("stored schedule_config does not parse; left out of the forecast");
        return;
    };
    // The schedule's own clock times are the same every day: worked out once.
    let times = dose_occurrences::clock_times(&config.times, &config.slots, &plan.slot_times);
    for (i, date) in days(today).enumerate() {
        if plan.end_date.is_some_and(|end| date > end) {
            break;
        }
        if date < plan.start_date {
            continue;
        }
        let Some(step) =
            dose_occurrences::schedule_day(plan.schedule_type, &config, plan.start_date, date)
        else {
            continue;
        };
        let doses = dose_occurrences::own_times(step).map_or(times.len(), <[_]>::len);
        if doses == 0 {
            continue;
        }
        let (amount, dose_unit) = match (plan.schedule_type, step) {
            (ScheduleType::Tapering, Some(step)) => {
                (step.dose_amount, step.dose_unit.unwrap_or(source.dose_unit))
            }
            _ => (source.dose_amount, source.dose_unit),
        };
        if counts(dose_unit) {
            add(
                &mut total[i],
                amount.0.checked_mul(Decimal::from(doses as i64)),
            );
        }
    }
}

/// The horizon's dates from `today`.
fn days(today: Date) -> impl Iterator<Item = Date> {
    std::iter::successors(Some(today), |d| d.tomorrow().ok()).take(HORIZON_DAYS)
}

#[cfg(test)]
mod tests {
    use super::super::forecast_store::SchedulePlan;
    use super::*;
    use crate::care::notification_preferences::slots::SlotTimes;
    use crate::decimal::Dec;
    use crate::medicine::forecast::StockStatus;
    use crate::medicine::vocab::DoseCycle;
    use serde_json::{Value, json};

    fn d(s: &str) -> Dec {
        s.parse().unwrap()
    }

    fn date(s: &str) -> Date {
        s.parse().unwrap()
    }

    fn schedule(
        schedule_type: &str,
        config: Value,
        start: &str,
        end: Option<&str>,
    ) -> DrawingSource {
        DrawingSource {
            medication_id: 1,
            medication_unit: Some(DoseUnit::Tablet),
            dose_amount: d("1"),
            dose_unit: DoseUnit::Tablet,
            schedule: Some(SchedulePlan {
                schedule_type: ScheduleType::parse(schedule_type).unwrap(),
                config,
                start_date: date(start),
                end_date: end.map(date),
                slot_times: SlotTimes::DEFAULT,
            }),
            dose_cycle: None,
            max_daily_doses: None,
            own_stock_option: None,
        }
    }

    fn status(
        sources: &[DrawingSource],
        today: &str,
        supply: &str,
        threshold: &str,
    ) -> (Option<i64>, Option<i64>) {
        let s = plan_of(sources, date(today)).status(
            Holder::Medication(1),
            d(supply),
            Some(d(threshold)),
        );
        (s.days_until_low_stock, s.days_until_out_of_stock)
    }

    const TODAY: &str = "2027-03-10";

    #[test]
    fn a_kept_plan_forecasts_each_supply_it_is_asked_about() {
        let twice = json!({"times": ["08:00", "20:00"]});
        let plan = plan_of(&[schedule("daily", twice, "2027-01-01", None)], date(TODAY));
        let ask = |supply: &str, threshold: Option<&str>| {
            let s = plan.status(Holder::Medication(1), d(supply), threshold.map(d));
            (
                s.days_until_low_stock,
                s.days_until_out_of_stock,
                s.low_stock,
            )
        };
        assert_eq!(ask("30", Some("10")), (Some(10), Some(15), false));
        assert_eq!(ask("30", Some("10")), (Some(10), Some(15), false));
        assert_eq!(ask("5", Some("10")), (Some(0), Some(2), true));
        assert_eq!(ask("5", None), (None, Some(2), false));
        assert_eq!(ask("30.0", Some("10")), (Some(10), Some(15), false));
        assert_eq!(
            plan.status(Holder::Medication(2), d("5"), None),
            StockStatus::default()
        );
    }

    #[test]
    fn steady_use_counts_whole_days() {
        let twice = json!({"times": ["08:00", "20:00"]});
        let daily = schedule("daily", twice.clone(), "2027-01-01", None);
        assert_eq!(
            status(std::slice::from_ref(&daily), TODAY, "30", "10"),
            (Some(10), Some(15))
        );
        assert_eq!(
            status(std::slice::from_ref(&daily), TODAY, "31", "10"),
            (Some(10), Some(15))
        );
        assert_eq!(
            status(std::slice::from_ref(&daily), TODAY, "5", "10"),
            (Some(0), Some(2))
        );
        assert_eq!(
            status(&[daily], TODAY, "10000", "0"),
            (Some(365), Some(365))
        );
        assert_eq!(status(&[], TODAY, "5", "10"), (None, None));
        // 2 a week: 4 tablets last exactly 14 days.
        let weekly = schedule(
            "weekly",
            json!({"times": ["08:00"], "weekdays": ["monday", "thursday"]}),
            "2027-01-01",
            None,
        );
        // 2027-03-10 is a Wednesday: Thursday, Monday, Thursday and Monday use
        // the 4; the Thursday after (15 days on) finds none.
        assert_eq!(status(&[weekly], TODAY, "4", "0").1, Some(15));
    }

    #[test]
    fn start_and_end_dates_bound_the_use() {
        let twice = json!({"times": ["08:00", "20:00"]});
        let later = schedule("daily", twice.clone(), "2027-09-10", None);
        // 184 days without use, then 10 and 15 more.
        assert_eq!(status(&[later], TODAY, "30", "10"), (Some(194), Some(199)));
        let ending = schedule("daily", twice.clone(), "2027-01-01", Some("2027-03-12"));
        assert_eq!(status(&[ending], TODAY, "30", "10"), (Some(365), Some(365)));
        let ended_soon = schedule("daily", twice, "2027-01-01", Some("2027-03-20"));
        // 11 days of 2: 22 used, 8 left; low after 10 days, never out.
        assert_eq!(
            status(&[ended_soon], TODAY, "30", "10"),
            (Some(10), Some(365))
        );
        let next_year = schedule("daily", json!({"times": ["08:00"]}), "2028-03-10", None);
        assert_eq!(status(&[next_year], TODAY, "30", "10"), (None, None));
    }

    #[test]
    fn each_pattern_plans_its_own_days() {
        // Every other day from 2027-03-09: the 11th, 13th, ... (the 10th is off).
        let alternate = schedule(
            "every_other_day",
            json!({"times": ["08:00"]}),
            "2027-03-09",
            None,
        );
        // Doses on days 1, 3, 5, 7 use the 4; day 9 finds none.
        assert_eq!(status(&[alternate], TODAY, "4", "0").1, Some(9));
        let dates = schedule(
            "specific_dates",
            json!({"times": ["08:00"], "dates": ["2027-03-01", "2027-03-12", "2027-06-01"]}),
            "2027-03-01",
            None,
        );
        // Only the 12 March and 1 June doses lie ahead: 1 left lasts to 1 June.
        assert_eq!(status(&[dates], TODAY, "1", "0").1, Some(83));
        // A slot the person cleared gives no dose; the others use their times.
        let mut slotted = schedule(
            "daily",
            json!({"slots": ["morning", "evening"]}),
            "2027-01-01",
            None,
        );
        if let Some(plan) = slotted.schedule.as_mut() {
            plan.slot_times.evening = None;
        }
        assert_eq!(status(&[slotted], TODAY, "10", "0").1, Some(10));
    }

    #[test]
    fn tapers_use_each_steps_amount() {
        let steps: Vec<Value> = (1..=10)
            .map(|n| {
                let day = date("2027-03-10").saturating_add(jiff::Span::new().days(n - 1));
                json!({"start_date": day.to_string(), "end_date": day.to_string(),
                       "dose_amount": n.to_string(), "dose_unit": "mg"})
            })
            .collect();
        let mut taper = schedule(
            "tapering",
            json!({"times": ["08:00"], "taper_steps": steps}),
            "2027-03-10",
            Some("2027-03-19"),
        );
        taper.medication_unit = Some(DoseUnit::Mg);
        taper.dose_unit = DoseUnit::Mg;
        // 1 + 2 + 3 + 4 = 10 ≤ 12 < 15: lasts 4 days.
        assert_eq!(
            status(std::slice::from_ref(&taper), TODAY, "12", "0").1,
            Some(4)
        );
        // A step in another unit draws on nothing.
        taper.medication_unit = Some(DoseUnit::Tablet);
        assert_eq!(status(&[taper], TODAY, "12", "0").1, None);
    }

    #[test]
    fn routine_assignments_spread_over_their_window() {
        let mut weekly = schedule("daily", json!({}), "2027-01-01", None);
        weekly.schedule = None;
        weekly.dose_cycle = Some(DoseCycle::Weekly);
        weekly.max_daily_doses = Some(2);
        assert_eq!(
            status(std::slice::from_ref(&weekly), TODAY, "4", "0").1,
            Some(14)
        );
        let mut own = weekly;
        own.own_stock_option = Some((7, DoseUnit::Tablet));
        let plan = plan_of(&[own], date(TODAY));
        assert_eq!(
            plan.status(Holder::Medication(1), d("4"), None),
            StockStatus::default()
        );
        let option = plan.status(Holder::DosageOption(7), d("4"), Some(d("2")));
        assert_eq!(
            (option.days_until_low_stock, option.days_until_out_of_stock),
            (Some(7), Some(14))
        );
    }
}

//! Run-out forecasts: how many days a stock lasts at the planned use. The
//! planned use per day comes from the care plan (`PlannedUse`, answered by
//! `crate::care::forecast`); the days each stock lasts are worked out here.
//!
//! The forecast steps through the [`HORIZON_DAYS`] days from today (in the
//! household time zone) and adds up what each live, running routine source
//! plans to use on each day, exactly as `listDoseOccurrences` projects its
//! doses: a schedule only between its start_date and end_date, on the days
//! its type gives (daily, weekly weekdays, specific dates, every other day
//! from its start, taper steps with their own amounts, units and times),
//! at its times and its person's slot times; a routine person medication
//! `max_daily_doses` (default 1) doses per dose-cycle window, spread evenly
//! over the window's days. Paused sources (an open pause period has no end)
//! plan nothing. Today counts in full, so a forecast errs towards running
//! out a little sooner.
//!
//! A source built from a dosage option that keeps its own stock draws on
//! that option's stock (doses in the option's unit); every other source on
//! its medication's stock (doses in the medication's unit, or any unit when
//! the medication has none). Doses in another unit draw on nothing.
//!
//! `days_until_*` is the number of whole days the stock stays at or above
//! the level (the reorder threshold, or zero): 0 when it is already at or
//! below it, at most [`HORIZON_DAYS`] (lasting at least that long), and
//! null only when nothing is planned to be used within the horizon.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rusqlite::Connection;
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::Serialize;

use crate::decimal::Dec;
use crate::error::Result;

/// How many days ahead (today included) a forecast looks.
pub const HORIZON_DAYS: usize = 365;

/// Whose stock a source draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    Medication(i64),
    DosageOption(i64),
}

// The derived stock fields of a medication or of a dosage option that
// keeps its own stock (flattened into either).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StockStatus {
    /// current_supply is at or below reorder_threshold
    pub low_stock: bool,
    /// current_supply is zero
    pub out_of_stock: bool,
    #[schemars(range(min = 0, max = HORIZON_DAYS), description = days_description("reorder_threshold (null without one)"))]
    pub days_until_low_stock: Option<i64>,
    #[schemars(range(min = 0, max = HORIZON_DAYS), description = days_description("zero"))]
    pub days_until_out_of_stock: Option<i64>,
}

fn days_description(level: &str) -> String {
    format!(
        "Whole days current_supply stays at or above {level} at the planned use, stepping \
         through the next {HORIZON_DAYS} days (today counted in full) with each live, \
         running routine schedule's dates, type, taper steps and times and each routine \
         person medication's doses per dose-cycle window; paused sources plan nothing. \
         0 when already at or below it; {HORIZON_DAYS} when it lasts at least that long; \
         null only when nothing is planned to be used within the {HORIZON_DAYS} days"
    )
}

/// The planned use of every stock holder drawn on by the sources of some
/// medications, as running totals: `used[day]` is what the days up to and
/// including `day` of the horizon use, so a forecast is a binary search.
#[derive(Debug, Default)]
pub struct Plan {
    used: HashMap<Holder, Vec<Decimal>>,
    /// Each holder's last forecast, with the supply and threshold it was
    /// worked out for: a kept plan answers the next read of the same stock
    /// without searching again.
    forecasts: RefCell<HashMap<Holder, Forecast>>,
}

#[derive(Debug, Clone, Copy)]
struct Forecast {
    supply: Dec,
    threshold: Option<Dec>,
    status: StockStatus,
}

impl Plan {
    /// A plan from each holder's running total of use over the horizon
    /// (`used[holder][day]`: what the days up to and including `day` use).
    pub fn from_running_use(used: HashMap<Holder, Vec<Decimal>>) -> Plan {
        Plan {
            used,
            forecasts: RefCell::default(),
        }
    }

    /// The stock fields of a holder with this supply and threshold.
    pub fn status(&self, holder: Holder, supply: Dec, threshold: Option<Dec>) -> StockStatus {
        let mut forecasts = self.forecasts.borrow_mut();
        if let Some(kept) = forecasts.get(&holder)
            && kept.supply == supply
            && kept.threshold == threshold
        {
            return kept.status;
        }
        let status = self.forecast(holder, supply, threshold);
        forecasts.insert(
            holder,
            Forecast {
                supply,
                threshold,
                status,
            },
        );
        status
    }

    fn forecast(&self, holder: Holder, supply: Dec, threshold: Option<Dec>) -> StockStatus {
        let used = self
            .used
            .get(&holder)
            .filter(|used| used.last().is_some_and(|total| *total > Decimal::ZERO));
        StockStatus {
            low_stock: threshold.is_some_and(|t| supply <= t),
            out_of_stock: !supply.is_positive(),
            days_until_low_stock: used
                .zip(threshold)
                .map(|(used, t)| days_until(supply, t, used)),
            days_until_out_of_stock: used.map(|used| days_until(supply, Dec::ZERO, used)),
        }
    }
}

/// Whole days `supply` stays at or above `level` with `used` the running
/// total of the use. The stock left only falls from day to day, so the
/// first day below the level is found by binary search.
fn days_until(supply: Dec, level: Dec, used: &[Decimal]) -> i64 {
    if supply <= level {
        return 0;
    }
    let below = |used: &Decimal| {
        // Rounded to 12 places: an even spread such as 2/7 a day is a
        // repeating decimal, and seven days of it must be exactly 2.
        let left = supply.0.checked_sub(*used).map(|l| l.round_dp(12));
        left.is_none_or(|left| left < level.0)
    };
    used.partition_point(|u| !below(u)) as i64
}

/// What the care plan, which sits above medicine, tells medicine: the
/// planned use of stocks (for the forecasts) and whether a medication is
/// still planned for anyone (before it may be deleted). The composition root
/// hands medicine care's answer (`crate::care::forecast::CarePlan`).
pub trait PlannedUse: Send + Sync {
    /// The plan of the stocks of `medication_ids` and of their dosage
    /// options.
    fn plan(
        &self,
        conn: &Connection,
        household_id: i64,
        medication_ids: &[i64],
    ) -> Result<Rc<Plan>>;

    /// Live schedules and live person medications that use a medication.
    fn live_sources(&self, conn: &Connection, medication_id: i64) -> Result<(i64, i64)>;
}

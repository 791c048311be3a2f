//! The reminder engine: which notifications fell due since the last scan,
//! queued in the outbox once per channel of each member who may view the
//! person, and when the next one falls due.
//!
//! - Expected doses come from `listDoseOccurrences` itself, read as each
//!   member (so only the people they may view, and pauses, retirement,
//!   as-needed sources, time zone and daylight saving all as that list
//!   has them). A timed dose still `open` at its time is `dose_due`; still
//!   open the grace period later (household setting, default 60 minutes),
//!   `missed_dose`. Untimed doses (routine assignments) have no time to
//!   remind at.
//! - `low_stock`: a medication whose supply reaches its reorder threshold
//!   starts an episode, told once to the members who may view a person with
//!   a live source of it; the episode ends when the supply is above the
//!   threshold again.
//! - The member's own notification preference decides: `enabled`, then
//!   the flag of each kind; `private_text_enabled` false keeps medication
//!   names out of the text.
//! - A scan covers the time since the previous one (`scanned_until`), so a
//!   restart queues what fell due while the server was down. What fell due
//!   longer than the catch-up window ago is recorded as dropped instead of
//!   sent. The first scan of a household only sets the starting point.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;

use super::outbox_store::{self, NewNotification};
use super::store::{self, Target};
use super::{DOSE_DUE, LOW_STOCK, MISSED_DOSE};
use crate::auth::{Actor, access};
use crate::care::dose_occurrences::{
    self,
    model::{DoseOccurrence, Outcome},
};
use crate::care::notification_preferences::store as preference_store;
use crate::care::source_row;
use crate::db::WriteTx;
use crate::decimal::Dec;
use crate::domain::Timestamp as Stored;
use crate::error::Result;
use crate::household::people;
use crate::household::store as household_store;
use crate::medicine::forecast::{Holder, Plan};
use crate::medicine::medications;
use crate::reminders::settings::ReminderSettings;

/// However long the server was down, a scan looks back at most this far.
const MAX_LOOKBACK: SignedDuration = SignedDuration::from_hours(48);

/// What a scan did, and when the engine should look again.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    pub queued: usize,
    pub dropped: usize,
    /// The earliest notification still to fall due among the doses of
    /// today and tomorrow.
    pub next_due: Option<Timestamp>,
}

impl Scan {
    fn wake_at(&mut self, at: Timestamp) {
        self.next_due = Some(self.next_due.map_or(at, |n| n.min(at)));
    }
}

/// The member's own preference flags (the defaults until they save any).
struct Preference {
    enabled: bool,
    dose_due: bool,
    missed_dose: bool,
    low_stock: bool,
    private_text: bool,
}

fn preference(conn: &Connection, actor: &Actor) -> Result<Preference> {
    let saved = match actor.person_id {
        Some(person_id) => preference_store::find_by_person(conn, person_id)?,
        None => None,
    };
    Ok(match saved {
        Some(p) => Preference {
            enabled: p.enabled,
            dose_due: p.dose_due_enabled,
            missed_dose: p.missed_dose_enabled,
            low_stock: p.low_stock_enabled,
            private_text: p.private_text_enabled,
        },
        None => Preference {
            enabled: true,
            dose_due: true,
            missed_dose: true,
            low_stock: true,
            private_text: false,
        },
    })
}

/// The member's channels this server delivers to now: phone tokens wait
/// while native push is off.
fn targets(
    conn: &Connection,
    membership_id: i64,
    settings: &ReminderSettings,
) -> Result<Vec<Target>> {
    let mut all = store::targets_of(conn, membership_id)?;
    all.retain(|t| super::channel_enabled(settings, t.channel));
    Ok(all)
}

/// Scans every household at `now`.
pub fn scan(conn: &WriteTx, now: Timestamp, settings: &ReminderSettings) -> Result<Scan> {
    let mut out = Scan::default();
    for household_id in household_store::household_ids(conn)? {
        scan_household(conn, household_id, now, settings, &mut out)?;
    }
    Ok(out)
}

/// The window (`from`, `now`] a scan covers, and what is too old to send.
struct Window {
    from: Timestamp,
    now: Timestamp,
    drop_before: Timestamp,
    /// The first scan only sets the starting point.
    first: bool,
}

impl Window {
    fn fell_due(&self, at: Timestamp) -> bool {
        !self.first && at > self.from && at <= self.now
    }
}

fn scan_household(
    conn: &WriteTx,
    household_id: i64,
    now: Timestamp,
    settings: &ReminderSettings,
    out: &mut Scan,
) -> Result<()> {
    let catch_up = settings.catch_up;
    let (scanned, grace_minutes) = store::progress(conn, household_id)?;
    let grace = SignedDuration::from_mins(grace_minutes);
    let window = Window {
        from: scanned
            .as_ref()
            .map_or(now, Stored::to_jiff)
            .max(now - MAX_LOOKBACK)
            .min(now),
        now,
        drop_before: now - catch_up,
        first: scanned.is_none(),
    };
    let tz = household_store::time_zone(conn, household_id)?;
    let members = store::reachable_members(conn, household_id)?;
    // Doses whose missed-dose time may fall in the window start up to the
    // grace period before it; tomorrow's give the next wake-up.
    let first_date = (window.from - grace).to_zoned_datetime(tz.clone()).date();
    let last_date = now
        .to_zoned_datetime(tz.clone())
        .date()
        .tomorrow()
        .unwrap_or(Date::MAX);
    for actor in &members {
        let preference = preference(conn, actor)?;
        if !preference.enabled || !(preference.dose_due || preference.missed_dose) {
            continue;
        }
        let targets = targets(conn, actor.membership_id, settings)?;
        let mut date = first_date;
        while date <= last_date {
            let (doses, _) = dose_occurrences::list(conn, actor, Some(date), None)?;
            for dose in &doses {
                let Some(at) = dose.scheduled_at.as_deref().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                if dose.outcome != Outcome::Open {
                    continue;
                }
                let kinds = [
                    (DOSE_DUE, at, preference.dose_due),
                    (MISSED_DOSE, at + grace, preference.missed_dose),
                ];
                for (kind, due, wanted) in kinds {
                    if !wanted {
                        continue;
                    }
                    if due > now {
                        out.wake_at(due);
                    } else if window.fell_due(due) {
                        let (title, body) =
                            dose_text(conn, kind, dose, at, &tz, preference.private_text)?;
                        let subject = format!(
                            "dose:{}:{}:{}:{}",
                            dose.source_type, dose.source_id, dose.window_starts_on, dose.position
                        );
                        queue(
                            conn, actor, &targets, kind, &subject, due, &window, &title, &body, out,
                        )?;
                    }
                }
            }
            date = match date.tomorrow() {
                Ok(next) => next,
                Err(_) => break,
            };
        }
    }
    low_stock(conn, household_id, &members, &window, settings, out)?;
    store::set_scanned_until(conn, household_id, &Stored::from_jiff(now))
}

#[allow(clippy::too_many_arguments)]
fn queue(
    conn: &WriteTx,
    actor: &Actor,
    targets: &[Target],
    kind: &'static str,
    subject: &str,
    due: Timestamp,
    window: &Window,
    title: &str,
    body: &str,
    out: &mut Scan,
) -> Result<()> {
    let due_at = Stored::from_jiff(due);
    let now = Stored::from_jiff(window.now);
    let dropped = due < window.drop_before;
    for target in targets {
        let added = outbox_store::enqueue(
            conn,
            &NewNotification {
                household_id: actor.household_id,
                membership_id: actor.membership_id,
                target: *target,
                kind,
                subject,
                due_at: &due_at,
                title,
                body,
                dropped,
                now: &now,
            },
        )?;
        if added && dropped {
            out.dropped += 1;
        } else if added {
            out.queued += 1;
        }
    }
    Ok(())
}

fn dose_text(
    conn: &Connection,
    kind: &str,
    dose: &DoseOccurrence,
    at: Timestamp,
    tz: &TimeZone,
    private_text: bool,
) -> Result<(String, String)> {
    let person = people::store::person_name(conn, dose.person_id)?;
    let time = at
        .to_zoned_datetime(tz.clone())
        .strftime("%H:%M")
        .to_string();
    Ok(match (kind == MISSED_DOSE, private_text) {
        (false, false) => ("Dose due".into(), format!("A dose for {person} is due")),
        (true, false) => (
            "Dose missed".into(),
            format!("A dose for {person} due at {time} has not been recorded"),
        ),
        (false, true) => (
            "Dose due".into(),
            format!(
                "{} {} of {} for {person} is due at {time}",
                dose.dose_amount,
                dose.dose_unit.as_str(),
                dose.medication_display_name
            ),
        ),
        (true, true) => (
            "Dose missed".into(),
            format!(
                "{} for {person} due at {time} has not been recorded",
                dose.medication_display_name
            ),
        ),
    })
}

/// Starts and ends low-stock episodes; a new one is told once to each
/// member who may view a person using the medication.
fn low_stock(
    conn: &WriteTx,
    household_id: i64,
    members: &[Actor],
    window: &Window,
    settings: &ReminderSettings,
    out: &mut Scan,
) -> Result<()> {
    let plan = Plan::default();
    for medication in medications::store::stocked_medications(conn, household_id)? {
        let (Ok(supply), Ok(threshold)) = (
            medication.supply.parse::<Dec>(),
            medication.threshold.parse::<Dec>(),
        ) else {
            continue;
        };
        let low = plan
            .status(Holder::Medication(medication.id), supply, Some(threshold))
            .low_stock;
        let (episode, was_low) = store::low_stock_state(conn, medication.id)?.unwrap_or((0, false));
        if low == was_low {
            continue;
        }
        let episode = if low { episode + 1 } else { episode };
        store::set_low_stock_state(conn, medication.id, episode, low)?;
        if !low || window.first {
            continue;
        }
        let users = source_row::people_using(conn, medication.id)?;
        let subject = format!("low_stock:{}:{episode}", medication.id);
        for actor in members {
            let preference = preference(conn, actor)?;
            if !preference.enabled || !preference.low_stock {
                continue;
            }
            let mut person = None;
            for id in &users {
                if access::person_access(conn, actor, *id)?.is_some() {
                    person = Some(*id);
                    break;
                }
            }
            let Some(person) = person else {
                continue;
            };
            let name = people::store::person_name(conn, person)?;
            let body = if preference.private_text {
                format!("{} for {name} is running low", medication.name)
            } else {
                format!("A medicine for {name} is running low")
            };
            let targets = targets(conn, actor.membership_id, settings)?;
            queue(
                conn,
                actor,
                &targets,
                LOW_STOCK,
                &subject,
                window.now,
                window,
                "Running low",
                &body,
                out,
            )?;
        }
    }
    Ok(())
}

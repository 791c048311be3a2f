//! The dose a schedule or a direct assignment gives: its medication, the
//! dosage option it started from, amount, unit, cycle and limits. One set
//! of rules for both, so they settle defaults the same way:
//!
//! 1. what the body gives;
//! 2. when the body names a dosage option (on create and PUT, or on PATCH
//!    one different from the current), that option's defaults: amount,
//!    unit, `default_dose_cycle`, `default_max_daily_doses`,
//!    `default_min_hours_between_doses` (and, for schedules, frequency);
//! 3. on create and PUT, the medication's `dose_amount` and `dose_unit`,
//!    and a daily dose cycle;
//! 4. on PATCH, the current value.
//!
//! Changing a dose changes the plan from now on; it never rewrites takes or
//! saved outcomes, which keep the dose they were recorded with.

use rusqlite::Connection;

pub use crate::care::sources::model::{Dose, DoseAttributes};
use crate::decimal::{Dec, NonNegativeDecimal};
use crate::domain::ResourceId;
use crate::error::{ApiError, Problems, Result};
use crate::medicine::dosage_options::model::DosageOption;
use crate::medicine::dosage_options::store as dosage_options_store;
use crate::medicine::medications::model::MedicationRow;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// The settled dose, with what the owner's own rules may need.
pub struct Settled {
    /// `None` when a problem was recorded.
    pub dose: Option<Dose>,
    pub medication: MedicationRow,
    /// The dosage option whose defaults were applied, if one was.
    pub applied_option: Option<DosageOption>,
}

/// Settles the dose. `current` is the saved dose (PATCH and PUT); `whole`
/// (create and PUT) makes omitted attributes take their defaults rather than
/// keep their values. A reference that names no live medication or dosage
/// option of the household is a 404; every other problem is added to
/// `problems`.
pub fn settle(
    conn: &Connection,
    household_id: i64,
    current: Option<&Dose>,
    whole: bool,
    mut attrs: DoseAttributes,
    problems: &mut Problems,
) -> Result<Option<Settled>> {
    let Some(medication) = settle_medication(
        conn,
        household_id,
        current,
        attrs.medication_id.take(),
        problems,
    )?
    else {
        return Ok(None);
    };
    let (option, applied_option) = settle_option(
        conn,
        household_id,
        current,
        whole,
        &medication,
        attrs.source_dosage_option_id.take(),
        problems,
    )?;
    let defaults = Defaults {
        option: applied_option.as_ref(),
        medication: whole.then_some(&medication),
        // On PATCH, what is not given or defaulted stays as it is.
        kept: if whole { None } else { current },
        whole,
    };
    let dose_amount = settle_amount(&attrs, &defaults, problems);
    let dose_unit = settle_unit(&attrs, &defaults, problems);
    let (dose_cycle, max_daily_doses, min_hours_between_doses) =
        settle_limits(&attrs, &defaults, problems);
    let dose = match (dose_amount, dose_unit) {
        (Some(dose_amount), Some(dose_unit)) => Some(Dose {
            medication_id: medication.id,
            medication_portable_id: medication.portable_id.clone(),
            source_dosage_option_id: option.as_ref().map(|o| o.id),
            source_dosage_option_portable_id: option.map(|o| o.portable_id),
            dose_amount,
            dose_unit,
            dose_cycle,
            max_daily_doses,
            min_hours_between_doses,
        }),
        _ => None,
    };
    Ok(Some(Settled {
        dose,
        medication,
        applied_option,
    }))
}

/// The medication named, or else the saved one; `None` (with the problem
/// added) when it is null or missing on create.
fn settle_medication(
    conn: &Connection,
    household_id: i64,
    current: Option<&Dose>,
    named: Option<Option<ResourceId>>,
    problems: &mut Problems,
) -> Result<Option<MedicationRow>> {
    let find = |id: &ResourceId| -> Result<Option<MedicationRow>> {
        Ok(Some(
            crate::medicine::medications::store::find(conn, household_id, id)?
                .ok_or_else(|| ApiError::not_found("medication"))?,
        ))
    };
    match (named, current) {
        (Some(Some(id)), _) => find(&id),
        (Some(None), _) => {
            problems.add("medication_id", "must not be null");
            Ok(None)
        }
        (None, Some(dose)) => find(&ResourceId::Numeric(dose.medication_id)),
        (None, None) => {
            problems.add("medication_id", "is required");
            Ok(None)
        }
    }
}

/// The dosage option the dose is built from, and the one whose defaults
/// apply (one newly named, or any named on create and PUT). A saved option
/// is kept on PATCH only while it is still of the medication.
fn settle_option(
    conn: &Connection,
    household_id: i64,
    current: Option<&Dose>,
    whole: bool,
    medication: &MedicationRow,
    named: Option<Option<ResourceId>>,
    problems: &mut Problems,
) -> Result<(Option<DosageOption>, Option<DosageOption>)> {
    let mut option: Option<DosageOption> = None;
    let mut applied_option: Option<DosageOption> = None;
    match named {
        Some(Some(id)) => {
            let found = dosage_options_store::find(conn, household_id, &id)?
                .ok_or_else(|| ApiError::not_found("dosage option"))?;
            let unchanged = current.is_some_and(|d| d.source_dosage_option_id == Some(found.id));
            if found.medication_id != medication.id {
                problems.add(
                    "source_dosage_option_id",
                    "must name a dosage option of the medication",
                );
            } else if whole || !unchanged {
                applied_option = Some(found.clone());
            }
            option = Some(found);
        }
        Some(None) => {}
        None if whole => {}
        None => {
            if let Some(id) = current.and_then(|d| d.source_dosage_option_id) {
                let kept =
                    dosage_options_store::find(conn, household_id, &ResourceId::Numeric(id))?;
                match kept {
                    Some(kept) if kept.medication_id == medication.id => option = Some(kept),
                    _ => problems.add(
                        "source_dosage_option_id",
                        "names a dosage option of another medication; send the new medication's option or null",
                    ),
                }
            }
        }
    }
    Ok((option, applied_option))
}

/// Where an attribute not sent comes from: the option applied, the
/// medication (create and PUT only), the saved dose (PATCH only).
struct Defaults<'a> {
    option: Option<&'a DosageOption>,
    medication: Option<&'a MedicationRow>,
    kept: Option<&'a Dose>,
    whole: bool,
}

fn settle_amount(
    attrs: &DoseAttributes,
    defaults: &Defaults<'_>,
    problems: &mut Problems,
) -> Option<Dec> {
    let dose_amount = match attrs.dose_amount {
        Some(None) => {
            problems.add("dose_amount", "must not be null");
            None
        }
        Some(Some(a)) => Some(a.get()),
        None => defaults
            .option
            .map(|o| o.amount)
            .or(defaults.medication.and_then(|m| m.dose_amount))
            .or(defaults.kept.map(|d| d.dose_amount)),
    };
    if dose_amount.is_none() && attrs.dose_amount.is_none() {
        problems.add(
            "dose_amount",
            "is required (the medication has no dose amount to start from)",
        );
    }
    dose_amount
}

fn settle_unit(
    attrs: &DoseAttributes,
    defaults: &Defaults<'_>,
    problems: &mut Problems,
) -> Option<DoseUnit> {
    let dose_unit = match attrs.dose_unit {
        Some(None) => {
            problems.add("dose_unit", "must not be null");
            None
        }
        Some(Some(u)) => Some(u),
        None => defaults
            .option
            .map(|o| o.unit)
            .or(defaults.medication.and_then(|m| m.dose_unit))
            .or(defaults.kept.map(|d| d.dose_unit)),
    };
    if dose_unit.is_none() && attrs.dose_unit.is_none() {
        problems.add(
            "dose_unit",
            "is required (the medication has no dose unit to start from)",
        );
    }
    dose_unit
}

/// The dose cycle, max_daily_doses and min_hours_between_doses.
fn settle_limits(
    attrs: &DoseAttributes,
    defaults: &Defaults<'_>,
    problems: &mut Problems,
) -> (Option<DoseCycle>, Option<i64>, Option<Dec>) {
    let (from_option, kept) = (defaults.option, defaults.kept);
    let dose_cycle = match attrs.dose_cycle {
        Some(None) => {
            problems.add("dose_cycle", "must be daily, weekly or monthly, not null");
            None
        }
        Some(Some(c)) => Some(c),
        None => match from_option {
            Some(o) => Some(o.default_dose_cycle.unwrap_or(DoseCycle::Daily)),
            None if defaults.whole => Some(DoseCycle::Daily),
            None => kept.and_then(|d| d.dose_cycle),
        },
    };
    let max_daily_doses = match attrs.max_daily_doses {
        Some(value) => value,
        None => match from_option {
            Some(o) => o.default_max_daily_doses,
            None => kept.and_then(|d| d.max_daily_doses),
        },
    };
    let min_hours_between_doses = match attrs.min_hours_between_doses {
        Some(value) => value.map(NonNegativeDecimal::get),
        None => match from_option {
            Some(o) => o.default_min_hours_between_doses,
            None => kept.and_then(|d| d.min_hours_between_doses),
        },
    };
    (dose_cycle, max_daily_doses, min_hours_between_doses)
}

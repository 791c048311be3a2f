//! Stock kept by medications and by dosage options that keep their own:
//! the one write that changes a held stock, and the deduction of a dose
//! given (the take rule in `care::medication_takes` calls it).

use crate::db::WriteTx;
use rusqlite::Connection;

use crate::db::change_feed::{self, Action, Change};
use crate::decimal::Dec;
use crate::domain::{ResourceId, Timestamp};
use crate::error::{ApiError, Result};
use crate::medicine::dosage_options::{self, model::DosageOption};
use crate::medicine::medications::{
    self,
    model::{MedicationRow, MedicationStock},
};
use crate::medicine::vocab::{DoseUnit, StockWarningCode};

/// A warning about the stock a take drew on: (code, message).
pub type StockWarning = (StockWarningCode, String);

/// What holds a stock: a medication, or a dosage option with its own.
#[derive(Debug, Clone, Copy)]
pub enum Holder<'a> {
    Medication { id: i64, portable_id: &'a str },
    DosageOption { id: i64, portable_id: &'a str },
}

impl<'a> Holder<'a> {
    pub fn medication(row: &'a MedicationRow) -> Self {
        Holder::Medication {
            id: row.id,
            portable_id: &row.portable_id,
        }
    }

    pub fn dosage_option(row: &'a DosageOption) -> Self {
        Holder::DosageOption {
            id: row.id,
            portable_id: &row.portable_id,
        }
    }
}

/// Sets a held stock, in the caller's transaction, moving its holder's
/// version on with a change-feed entry, so every client learns the new
/// count whoever changed it.
pub fn set_supply(
    conn: &WriteTx,
    household_id: i64,
    holder: Holder<'_>,
    supply: Dec,
    now: &Timestamp,
) -> Result<()> {
    let (record_type, record_id, record_portable_id) = match holder {
        Holder::Medication { id, portable_id } => {
            medications::store::set_supply(conn, id, supply, now)?;
            (medications::RECORD_TYPE, id, portable_id)
        }
        Holder::DosageOption { id, portable_id } => {
            dosage_options::store::set_supply(conn, id, supply, now)?;
            (dosage_options::RECORD_TYPE, id, portable_id)
        }
    };
    change_feed::append(
        conn,
        Change {
            household_id,
            record_type,
            record_id,
            record_portable_id,
            action: Action::Update,
            person_id: None,
        },
    )
}

/// The dosage option a source was built from and its own stock, when it
/// is of `medication_id` and keeps one.
fn own_stock_option(
    conn: &Connection,
    household_id: i64,
    built_from: Option<i64>,
    medication_id: i64,
) -> Result<Option<(DosageOption, Dec)>> {
    let Some(id) = built_from else {
        return Ok(None);
    };
    Ok(
        dosage_options::store::find(conn, household_id, &ResourceId::Numeric(id))?
            .filter(|d| d.medication_id == medication_id)
            .and_then(|d| d.current_supply.map(|supply| (d, supply))),
    )
}

/// What a dose given under a source does to the stock it draws on, worked
/// out before anything is written: the own stock of the dosage option the
/// source was built from (`built_from`) when that option is of
/// `medication` and keeps its own stock (doses in the option's unit), else
/// the medication's (doses in its unit, or any unit when it has none). A
/// dose in another unit deducts nothing; a dose larger than the stock
/// empties it. Both are warnings, since a dose already given is never
/// refused.
pub struct Deduction {
    /// The stock drawn on and its count after the dose; `None` when the
    /// dose deducts nothing.
    change: Option<(Held, Dec)>,
    warnings: Vec<StockWarning>,
}

/// A [`Holder`] owning its portable id.
enum Held {
    Medication(i64, String),
    DosageOption(i64, String),
}

impl Held {
    fn holder(&self) -> Holder<'_> {
        match self {
            Held::Medication(id, portable_id) => Holder::Medication {
                id: *id,
                portable_id,
            },
            Held::DosageOption(id, portable_id) => Holder::DosageOption {
                id: *id,
                portable_id,
            },
        }
    }
}

/// The [`Deduction`] of a dose of `amount` `unit` taken from `medication`
/// under a source built from `built_from`; 422 only for a stock saved
/// before the range of quantities was enforced.
pub fn plan_take(
    conn: &Connection,
    household_id: i64,
    medication: &MedicationStock,
    built_from: Option<i64>,
    amount: Dec,
    unit: DoseUnit,
) -> Result<Deduction> {
    let option = own_stock_option(conn, household_id, built_from, medication.id)?;
    let (before, counts, held) = match option {
        Some((option, supply)) => (
            supply,
            option.unit == unit,
            Held::DosageOption(option.id, option.portable_id),
        ),
        None => (
            medication.current_supply,
            medication.dose_unit.is_none_or(|u| u == unit),
            Held::Medication(medication.id, medication.portable_id.clone()),
        ),
    };
    if !counts {
        let whose = match held {
            Held::Medication(..) => "medication's",
            Held::DosageOption(..) => "dosage option's",
        };
        return Ok(Deduction {
            change: None,
            warnings: vec![(
                StockWarningCode::NotDeducted,
                format!("stock not deducted: the take's unit differs from the {whose}"),
            )],
        });
    }
    let mut warnings = Vec::new();
    let after = match before.0.checked_sub(amount.0).map(Dec) {
        Some(after) if after.is_negative() => {
            warnings.push((
                StockWarningCode::RanOut,
                format!("stock ran out: supply was {before}"),
            ));
            Dec::ZERO
        }
        Some(after) if after.in_range() => after,
        // Only a stock saved before the range was enforced can get here.
        _ => {
            return Err(ApiError::invalid(
                "dose_amount",
                "would leave a stock outside the range of quantities kept; count the stock (adjust_inventory) first",
            ));
        }
    };
    Ok(Deduction {
        change: Some((held, after)),
        warnings,
    })
}

/// Deducts a dose as `deduction` worked out, in the caller's transaction
/// (at its moment, the take's own created_at), with the stock's new
/// version and change-feed entry; its warnings.
pub fn deduct_take(
    conn: &WriteTx,
    household_id: i64,
    deduction: Deduction,
) -> Result<Vec<StockWarning>> {
    if let Some((held, after)) = &deduction.change {
        set_supply(conn, household_id, held.holder(), *after, conn.now())?;
    }
    Ok(deduction.warnings)
}

//! Stock drawn by doses given: which stock a take deducts from, and the
//! deduction itself (the take rule in `care::medication_takes` calls this).

use rusqlite::{Connection, OptionalExtension, params};

use crate::db::change_feed::{self, Action, Change};
use crate::decimal::Dec;
use crate::domain::record_type;
use crate::error::{ApiError, Result};
use crate::medicine::medications::model::MedicationRow;
use crate::medicine::stock_removals::store::{set_dosage_supply, set_medication_supply};
use crate::medicine::vocab::DoseUnit;

/// A warning about the stock a take drew on: (code, message).
pub type StockWarning = (&'static str, String);

/// The dosage option a source (`schedule` or `person_medication`) was built
/// from, when it belongs to `medication_id` and keeps its own stock: (id,
/// portable id, unit, stock).
fn own_stock_option(
    conn: &Connection,
    source_type: &str,
    source_id: i64,
    medication_id: i64,
) -> Result<Option<(i64, String, DoseUnit, Dec)>> {
    let table = match source_type {
        "schedule" => "schedules",
        "person_medication" => "person_medications",
        _ => return Ok(None),
    };
    Ok(conn
        .prepare_cached(&format!(
            "SELECT d.id, d.portable_id, d.unit, d.current_supply
             FROM {table} x JOIN dosage_options d ON d.id = x.source_dosage_option_id
             WHERE x.id = ?1 AND d.medication_id = ?2 AND d.current_supply IS NOT NULL"
        ))?
        .query_row(params![source_id, medication_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?)
}

/// Deducts a dose given under a source from the stock it draws on, in the
/// caller's transaction, with that stock's new version and change-feed
/// entry: the own stock of the dosage option the source was built from when
/// that option is of `medication` and keeps its own stock (doses in the
/// option's unit), else the medication's (doses in its unit, or any unit
/// when it has none). A dose in another unit deducts nothing; a dose larger
/// than the stock empties it. Both are reported as warnings, since a dose
/// already given is never refused.
pub fn deduct_take(
    conn: &Connection,
    household_id: i64,
    medication: &MedicationRow,
    source: (&str, i64),
    amount: Dec,
    unit: DoseUnit,
    now: &str,
) -> Result<Vec<StockWarning>> {
    let option = own_stock_option(conn, source.0, source.1, medication.id)?;
    let (before, counts, holder) = match &option {
        Some((_, _, option_unit, supply)) => (*supply, *option_unit == unit, "dosage option's"),
        None => (
            medication.current_supply,
            medication.dose_unit.is_none_or(|u| u == unit),
            "medication's",
        ),
    };
    if !counts {
        return Ok(vec![(
            "stock_not_deducted",
            format!("stock not deducted: the take's unit differs from the {holder}"),
        )]);
    }
    let mut warnings = Vec::new();
    let after = match before.0.checked_sub(amount.0).map(Dec) {
        Some(after) if after.is_negative() => {
            warnings.push((
                "stock_ran_out",
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
    let (record_type, record_id, portable_id) = match &option {
        Some((id, portable_id, _, _)) => {
            set_dosage_supply(conn, *id, after, now)?;
            (record_type::DOSAGE_OPTION, *id, portable_id.as_str())
        }
        None => {
            set_medication_supply(conn, medication.id, after, now)?;
            (
                record_type::MEDICATION,
                medication.id,
                medication.portable_id.as_str(),
            )
        }
    };
    change_feed::append(
        conn,
        Change {
            household_id,
            record_type,
            record_id,
            record_portable_id: portable_id,
            action: Action::Update,
            person_id: None,
        },
    )?;
    Ok(warnings)
}

//! Stock removals: stock that left the cupboard other than as a dose
//! (expired, damaged, lost, ...). A removal decrements the medication's
//! stock, or a dosage option's own stock, exactly once per submission id.
//! It is not a medication take.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::Actor;
use crate::auth::access::require_inventory;
use crate::decimal::Dec;
use crate::domain::{Page, ResourceId, Text, Timestamp, trimmed};
use crate::error::{ApiError, Result};
use crate::household::audit;
use crate::medicine::medications;
use crate::medicine::{dosage_options, stock};
use model::{NewStockRemoval, StockRemoval};

pub const AUDIT_EVENT: &str = "medication.stock_removed";

pub use model::MAX_NOTE;

/// The medication's removals, newest first.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    medication_id: &ResourceId,
    page: Page,
) -> Result<(Vec<StockRemoval>, i64)> {
    require_inventory(actor)?;
    let medication = medications::find(conn, actor, medication_id)?;
    store::list(conn, medication.id, page)
}

/// The facts a submission id stands for; a retry must repeat them exactly.
#[derive(Debug, PartialEq)]
struct Facts<'a> {
    quantity: Dec,
    reason: crate::medicine::vocab::StockRemovalReason,
    note: Option<&'a str>,
    dosage_option_id: Option<i64>,
}

impl StockRemoval {
    fn facts(&self) -> Facts<'_> {
        Facts {
            quantity: self.quantity,
            reason: self.reason,
            note: self.note.as_deref(),
            dosage_option_id: self.dosage_option_id,
        }
    }
}

/// The permission and the medication a removal needs, checked before a
/// fresh removal and before a saved response is replayed.
pub fn authorize(
    conn: &Connection,
    actor: &Actor,
    medication_id: &ResourceId,
) -> Result<medications::model::MedicationRow> {
    require_inventory(actor)?;
    medications::find(conn, actor, medication_id)
}

/// Records a removal and decrements the stock it came from, all in the
/// caller's transaction. A repeated submission id with the same facts
/// returns the saved removal and changes nothing; with other facts it is a
/// 409 `submission_id_reused`. The permission is checked before anything,
/// a replay included.
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    medication_id: &ResourceId,
    input: NewStockRemoval,
) -> Result<StockRemoval> {
    let medication = authorize(conn, actor, medication_id)?;

    let note = trimmed(input.note.map(Text::into_inner));

    // The option named (by numeric or portable id) is resolved first, so a
    // retry naming it either way states the same facts.
    let named_dosage = match &input.dosage_id {
        Some(reference) => Some(
            dosage_options::store::find(conn, actor.household_id, &reference.0)?
                .filter(|d| d.medication_id == medication.id)
                .ok_or_else(|| ApiError::not_found("dosage option"))?,
        ),
        None => None,
    };
    let submission_id = input.submission_id.0;
    let facts = Facts {
        quantity: input.quantity.get(),
        reason: input.reason,
        note: note.as_deref(),
        dosage_option_id: named_dosage.as_ref().map(|d| d.id),
    };
    if let Some(saved) = store::find_by_submission(conn, medication.id, &submission_id)? {
        if saved.facts() == facts {
            return Ok(saved);
        }
        return Err(ApiError::conflict(
            "submission_id_reused",
            "this submission_id was already used for a different stock removal of this medication; \
             use a new submission_id for a new removal",
        ));
    }

    // Where the stock comes from: a dosage option's own stock, or the medication's.
    let (holder, supply_before) = match &named_dosage {
        Some(d) => match d.current_supply {
            Some(supply) => (stock::Holder::dosage_option(d), supply),
            None => {
                return Err(ApiError::invalid(
                    "dosage_id",
                    "names a dosage option that does not keep its own stock",
                ));
            }
        },
        None => (
            stock::Holder::medication(&medication),
            medication.current_supply,
        ),
    };
    let supply_after = remaining(supply_before, facts.quantity)?;

    let now = Timestamp::now();
    stock::set_supply(conn, actor.household_id, holder, supply_after, &now)?;

    let portable_id = crate::db::new_portable_id();
    let id = store::insert(
        conn,
        &store::NewRow {
            portable_id: &portable_id,
            household_id: actor.household_id,
            medication_id: medication.id,
            dosage_option_id: facts.dosage_option_id,
            quantity: facts.quantity,
            reason: facts.reason,
            note: facts.note,
            submission_id: &submission_id,
            supply_before,
            supply_after,
            actor_membership_id: Some(actor.membership_id),
            created_at: &now,
        },
    )?;
    // The note can hold clinical detail, so it stays out of the audit trail.
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        AUDIT_EVENT,
        ("medication", medication.id),
        json!({
            "stock_removal_id": id,
            "medication_id": medication.id,
            "dosage_option_id": facts.dosage_option_id,
            "quantity": facts.quantity,
            "reason": facts.reason.as_str(),
            "supply_before": supply_before,
            "supply_after": supply_after,
        }),
    )?;
    store::find(conn, id)?.ok_or_else(|| ApiError::internal("saved stock removal is missing"))
}

/// The stock left after removing `quantity`; a 422 when the stock holds
/// less, since a removal never takes more than is there.
fn remaining(supply_before: Dec, quantity: Dec) -> Result<Dec> {
    match supply_before.checked_sub(quantity) {
        Some(after) if !after.is_negative() => Ok(after),
        Some(_) => Err(ApiError::invalid(
            "quantity",
            format!("is more than the current supply of {supply_before}; nothing was removed"),
        )),
        // Only a stock saved before the range was enforced can get here.
        None => Err(ApiError::invalid(
            "quantity",
            "would leave a stock outside the range of quantities kept; count the stock (adjust_inventory) first",
        )),
    }
}

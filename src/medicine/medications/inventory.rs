//! Stock operations on a medication: a counted adjustment, an order and a
//! receipt. Each writes an audit event beside the change.

use jiff::civil::Date;
use rusqlite::Connection;
use serde::Deserialize;
use serde_json::json;

use super::model::{self, Medication};
use super::{for_change, save, trimmed};
use crate::auth::Actor;
use crate::decimal::Dec;
use crate::error::{ApiError, Result};
use crate::household::audit;
use crate::http::extract::{IfMatch, ResourceId, present};
use crate::medicine::vocab::{AdjustmentReason, ReorderStatus};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adjustment {
    /// The counted stock, which becomes current_supply.
    pub quantity: Dec,
    pub reason: AdjustmentReason,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentBody {
    pub adjustment: Adjustment,
}

/// Sets the stock to a counted quantity.
pub fn adjust_inventory(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    adjustment: Adjustment,
) -> Result<Medication> {
    if adjustment.quantity.is_negative() {
        return Err(ApiError::invalid("quantity", "must not be negative"));
    }
    if adjustment
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > 1000)
    {
        return Err(ApiError::invalid("note", "must be at most 1000 characters"));
    }
    let mut row = for_change(conn, actor, id, if_match)?;
    let previous = row.current_supply;
    row.current_supply = adjustment.quantity;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.inventory_adjusted",
        ("medication", row.id),
        json!({"previous_supply": previous, "new_supply": adjustment.quantity,
               "reason": adjustment.reason.as_str()}),
    )?;
    save(conn, actor, row)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderDetails {
    #[serde(default, deserialize_with = "present")]
    pub supplier: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub quantity: Option<Option<Dec>>,
    #[serde(default, deserialize_with = "present")]
    pub expected_on: Option<Option<Date>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderBody {
    #[serde(default)]
    pub order_details: OrderDetails,
}

fn check_order_quantity(quantity: Option<Dec>) -> Result<()> {
    match quantity {
        Some(q) if !q.is_positive() => {
            Err(ApiError::invalid("quantity", "must be greater than zero"))
        }
        _ => Ok(()),
    }
}

/// Records that more has been ordered.
pub fn mark_as_ordered(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    details: OrderDetails,
) -> Result<Medication> {
    let quantity = details.quantity.flatten();
    check_order_quantity(quantity)?;
    let supplier = trimmed(details.supplier.flatten());
    if supplier.as_ref().is_some_and(|s| s.chars().count() > 200) {
        return Err(ApiError::invalid(
            "supplier",
            "must be at most 200 characters",
        ));
    }
    let mut row = for_change(conn, actor, id, if_match)?;
    row.reorder = model::Reorder {
        status: Some(ReorderStatus::Ordered),
        supplier,
        quantity,
        expected_on: details.expected_on.flatten().map(|d| d.to_string()),
        ordered_at: Some(crate::time::now()),
        received_at: None,
    };
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.marked_as_ordered",
        ("medication", row.id),
        json!({"quantity": quantity}),
    )?;
    save(conn, actor, row)
}

/// Records a delivery: its quantity (or else the ordered quantity) is added to the stock.
pub fn mark_as_received(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    details: OrderDetails,
) -> Result<Medication> {
    if details.supplier.is_some() || details.expected_on.is_some() {
        return Err(ApiError::invalid(
            "order_details",
            "a receipt takes only quantity",
        ));
    }
    let mut row = for_change(conn, actor, id, if_match)?;
    let received = details
        .quantity
        .flatten()
        .or(row.reorder.quantity)
        // With no quantity sent and none recorded by an order, the
        // medication's state cannot say how much arrived.
        .ok_or_else(|| {
            ApiError::conflict(
                "no_order_quantity",
                "no ordered quantity is recorded; send order_details.quantity with the receipt",
            )
        })?;
    check_order_quantity(Some(received))?;
    let previous = row.current_supply;
    row.current_supply = previous
        .checked_add(received)
        .ok_or_else(|| ApiError::invalid("quantity", "is too large"))?;
    row.reorder.status = Some(ReorderStatus::Received);
    row.reorder.quantity = Some(received);
    row.reorder.received_at = Some(crate::time::now());
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.marked_as_received",
        ("medication", row.id),
        json!({"quantity": received, "previous_supply": previous, "new_supply": row.current_supply}),
    )?;
    save(conn, actor, row)
}

//! Stock operations on a medication: a counted adjustment, an order and a
//! receipt. Each writes an audit event beside the change.

use crate::db::WriteTx;
use serde_json::json;

use super::model::{self, Adjustment, Medication, OrderDetails, ReceiptDetails};
use super::{for_change, save, trimmed};
use crate::auth::Actor;
use crate::decimal::PositiveDecimal;
use crate::domain::{IfMatch, ResourceId, Text, Timestamp};
use crate::error::{ApiError, Result};
use crate::household::audit;
use crate::medicine::forecast::PlannedUse;
use crate::medicine::vocab::ReorderStatus;

/// Sets the stock to a counted quantity.
pub fn adjust_inventory(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    adjustment: Adjustment,
) -> Result<Medication> {
    let mut row = for_change(conn, actor, id, if_match)?;
    let previous = row.current_supply;
    row.current_supply = adjustment.quantity.get();
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.inventory_adjusted",
        ("medication", row.id),
        json!({"previous_supply": previous, "new_supply": adjustment.quantity,
               "reason": adjustment.reason.as_str()}),
    )?;
    save(conn, actor, plan, row)
}

/// Records an order. While an order is outstanding (`reorder_status`
/// `ordered`) a repeated order amends it rather than adding a second one:
/// each field sent replaces the recorded one (quantity is the whole amount
/// still expected, so a retried request never counts twice) and fields not
/// sent are kept, `reorder_ordered_at` included. Once the last order was
/// received (or none was placed) an order starts afresh.
pub fn mark_as_ordered(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    details: OrderDetails,
) -> Result<Medication> {
    let quantity = details.quantity.map(|q| q.map(PositiveDecimal::get));
    let supplier = details.supplier.map(|s| trimmed(s.map(Text::into_inner)));
    let mut row = for_change(conn, actor, id, if_match)?;
    let outstanding = row.reorder.status == Some(ReorderStatus::Ordered);
    let previous = if outstanding {
        row.reorder.clone()
    } else {
        model::Reorder::default()
    };
    let expected_on = details
        .expected_on
        .map(|d| d.map(|d| d.to_string()))
        .unwrap_or(previous.expected_on);
    row.reorder = model::Reorder {
        status: Some(ReorderStatus::Ordered),
        supplier: supplier.unwrap_or(previous.supplier),
        quantity: quantity.unwrap_or(previous.quantity),
        expected_on,
        ordered_at: previous.ordered_at.or_else(|| Some(Timestamp::now())),
        received_at: None,
    };
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.marked_as_ordered",
        ("medication", row.id),
        json!({"quantity": row.reorder.quantity, "amended": outstanding}),
    )?;
    save(conn, actor, plan, row)
}

/// Records a delivery, which is added to the stock: the quantity sent, or
/// else everything still outstanding on the open order. With neither it is
/// a 409 `no_order_quantity` (a receipt never repeats an earlier one). A
/// delivery short of the outstanding quantity leaves the rest on order
/// (`reorder_status` stays `ordered`, `reorder_quantity` becomes what is
/// still expected); one that covers it closes the order.
pub fn mark_as_received(
    conn: &WriteTx,
    actor: &Actor,
    plan: &dyn PlannedUse,
    id: &ResourceId,
    if_match: &IfMatch,
    details: ReceiptDetails,
) -> Result<Medication> {
    if details.supplier.is_some() || details.expected_on.is_some() {
        return Err(ApiError::invalid(
            "order_details",
            "a receipt takes only quantity",
        ));
    }
    let sent = details.quantity.flatten().map(PositiveDecimal::get);
    let mut row = for_change(conn, actor, id, if_match)?;
    let outstanding = match row.reorder.status {
        Some(ReorderStatus::Ordered) => row.reorder.quantity,
        _ => None,
    };
    let received = sent.or(outstanding).ok_or_else(|| {
        ApiError::conflict(
            "no_order_quantity",
            "no quantity is outstanding on an order; send order_details.quantity with the receipt",
        )
    })?;
    let previous = row.current_supply;
    row.current_supply = crate::decimal::stock_sum(previous, received, "quantity")?;
    let remaining = outstanding
        .and_then(|o| o.checked_sub(received))
        .filter(|r| r.is_positive());
    let now = Timestamp::now();
    match remaining {
        Some(remaining) => {
            row.reorder.quantity = Some(remaining);
        }
        None => {
            row.reorder.status = Some(ReorderStatus::Received);
            row.reorder.quantity = Some(received);
        }
    }
    row.reorder.received_at = Some(now);
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "medication.marked_as_received",
        ("medication", row.id),
        json!({"quantity": received, "previous_supply": previous, "new_supply": row.current_supply,
               "still_on_order": remaining}),
    )?;
    save(conn, actor, plan, row)
}

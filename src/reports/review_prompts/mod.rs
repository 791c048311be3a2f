//! Medication review prompts: made by the background pass (pass.rs) when
//! the interaction evidence of one of a person's active medicines names
//! another; reviewed by members.
//!
//! Reading needs view access to the prompt's person (404 outside scope).
//! Recording a review needs manage access (403 below it) and the prompt's
//! current ETag in If-Match (428 without, 409 stale). Statuses move as
//! docs/decisions.md describes: `pending`, `hidden` and
//! `acknowledged` move freely among themselves and to a practitioner
//! status; a practitioner status (which needs the practitioner's name,
//! role and review date) moves only to the other practitioner status. The
//! evidence snapshot and the medicines never change (422). The review and
//! its audit event commit together; the audit event holds the statuses
//! only, never the practitioner's details or the notes.

pub mod model;
pub mod pass;
pub mod routes;
pub mod store;
pub mod task;

use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::db::WriteTx;
use crate::domain::{IfMatch, Page, ResourceId, Timestamp, etag, trimmed};
use crate::error::{ApiError, Problems, Result};
use crate::household::audit;
use model::{MedicationReviewPrompt, PromptRow, ReviewAttributes, ReviewStatus};
pub use store::Filter;

/// What sync batch results name a prompt as.
pub const RECORD_TYPE: &str = "MedicationReviewPrompt";
/// The audit event of a recorded review.
pub const REVIEW_UPDATED: &str = "medication_review.updated";
const SUBJECT: &str = "medication_review_prompt";
/// The access to the prompt's person a review needs.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;

/// 404 when the person is outside the actor's scope, 403 below `needed`.
pub fn require_access(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    needed: AccessLevel,
) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        needed,
        "medication review prompt",
        "recording a review needs manage access to the person",
    )
}

fn find(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<PromptRow> {
    let row = store::find(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("medication review prompt"))?;
    require_access(conn, actor, row.person_id, needed)?;
    Ok(row)
}

/// `getMedicationReviewPrompt`: view access to the person.
pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<MedicationReviewPrompt> {
    Ok(find(conn, actor, id, AccessLevel::View)?.into())
}

/// `listMedicationReviewPrompts`: prompts of the people the actor may view.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<MedicationReviewPrompt>, i64)> {
    let (rows, total) = store::list_visible(conn, actor, filter, page)?;
    Ok((rows.into_iter().map(Into::into).collect(), total))
}

/// What recording a review needs now: manage access to the prompt's
/// person (the re-check before a saved review is replayed).
pub fn authorize(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<()> {
    find(conn, actor, id, WRITE_LEVEL).map(drop)
}

/// Whether a prompt may move from `from` to `to`.
pub fn may_move(from: ReviewStatus, to: ReviewStatus) -> bool {
    from == to || !from.is_practitioner() || to.is_practitioner()
}

/// Applies the review attributes, collecting every problem first.
fn apply(row: &mut PromptRow, attrs: ReviewAttributes) -> Result<()> {
    let mut problems = Problems::default();
    for field in attrs.read_only_sent() {
        problems.add(
            field,
            "cannot be changed: the evidence of a prompt is immutable",
        );
    }
    let from = row.review_status;
    match attrs.review_status {
        Some(None) => problems.add("review_status", "must not be null"),
        Some(Some(to)) if !may_move(from, to) => problems.add(
            "review_status",
            format!(
                "cannot move from {} to {}: a practitioner review stays a practitioner review",
                from.as_str(),
                to.as_str()
            ),
        ),
        Some(Some(to)) => row.review_status = to,
        None => {}
    }
    if let Some(name) = attrs.practitioner_name {
        row.practitioner_name = trimmed(name.map(|n| n.into_inner()));
    }
    if let Some(role) = attrs.practitioner_role {
        row.practitioner_role = trimmed(role.map(|r| r.into_inner()));
    }
    if let Some(date) = attrs.reviewed_on {
        row.reviewed_on = date.map(|d| d.to_string());
    }
    if let Some(notes) = attrs.notes {
        row.notes = trimmed(notes.map(|n| n.into_inner()));
    }
    if row.review_status.is_practitioner() {
        let needed = [
            ("practitioner_name", row.practitioner_name.is_none()),
            ("practitioner_role", row.practitioner_role.is_none()),
            ("reviewed_on", row.reviewed_on.is_none()),
        ];
        for (field, missing) in needed {
            if missing {
                problems.add(field, "is required for a practitioner review status");
            }
        }
    }
    problems.check("the review is invalid")
}

/// `updateMedicationReviewPrompt` (and the batch's `medication_review
/// update`): records a review. Needs manage access and the current ETag.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ReviewAttributes,
) -> Result<MedicationReviewPrompt> {
    let mut row = find(conn, actor, id, WRITE_LEVEL)?;
    if_match.require(&etag(&row.portable_id, row.lock_version))?;
    let from = row.review_status;
    apply(&mut row, attrs)?;
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::save_review(conn, &row, actor.membership_id)?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        REVIEW_UPDATED,
        (SUBJECT, row.id),
        serde_json::json!({
            "person_id": row.person_id,
            "from_status": from.as_str(),
            "to_status": row.review_status.as_str(),
        }),
    )?;
    Ok(row.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReviewStatus::*;

    #[test]
    fn practitioner_reviews_stay_practitioner_reviews() {
        assert!(may_move(Pending, Hidden));
        assert!(may_move(Hidden, Pending));
        assert!(may_move(Acknowledged, PractitionerReviewed));
        assert!(may_move(PractitionerReviewed, PractitionerChanged));
        assert!(may_move(PractitionerChanged, PractitionerChanged));
        assert!(!may_move(PractitionerReviewed, Pending));
        assert!(!may_move(PractitionerChanged, Hidden));
    }
}

//! Each tool's call: the rule it runs as the caller (the one the REST
//! handler and the sync batch call), on a reader for a tool that only
//! reads and on the writer otherwise.

use rusqlite::Connection;

use crate::auth::Actor;
use crate::care::dose_occurrences::model::Outcome;
use crate::care::dose_occurrences::outcomes::{self as dose_outcomes, NotTakenAttrs};
use crate::care::{health_events, medication_takes, pause_periods};
use crate::db::WriteTx;
use crate::domain::{IfMatch, Page};
use crate::error::{ApiError, Result};
use crate::household::people;
use crate::medicine::{medications, stock_removals};
use crate::reports::review_prompts;
use crate::state::AppState;

use super::model::*;

pub(super) async fn household_summary(
    state: &AppState,
    actor: Actor,
    NoInput {}: NoInput,
) -> Result<HouseholdSummary> {
    read(state, move |conn| summary(conn, &actor)).await
}

pub(super) async fn expected_doses(
    state: &AppState,
    actor: Actor,
    day: DayInput,
) -> Result<ExpectedDoses> {
    let date = crate::care::dose_occurrences::parse_date_param(day.date.as_deref())?;
    read(state, move |conn| {
        let (data, meta) =
            crate::care::dose_occurrences::list(conn, &actor, date, day.person_id.as_ref())?;
        Ok(ExpectedDoses { data, meta })
    })
    .await
}

pub(super) async fn medications(
    state: &AppState,
    actor: Actor,
    paging: PageInput,
) -> Result<Medications> {
    let page = page(paging.page, paging.per_page)?;
    read(state, move |conn| {
        let (data, total) =
            medications::list(conn, &actor, &crate::care::forecast::CarePlan, None, page)?;
        Ok(Medications {
            data,
            meta: page.meta(total),
        })
    })
    .await
}

pub(super) async fn person_activity(
    state: &AppState,
    actor: Actor,
    person: PersonInput,
) -> Result<PersonActivity> {
    let page = page(None, person.limit)?;
    read(state, move |conn| {
        // The person must be visible, as for the REST person reads.
        people::get(conn, &actor, &person.person_id)?;
        let takes = medication_takes::store::Filter {
            person_id: Some(person.person_id.clone()),
            ..Default::default()
        };
        let events = health_events::store::Filter {
            person_id: Some(person.person_id.clone()),
            ..Default::default()
        };
        Ok(PersonActivity {
            medication_takes: medication_takes::list(conn, &actor, &takes, page)?.0,
            health_events: health_events::list(conn, &actor, &events, page)?.0,
        })
    })
    .await
}

pub(super) async fn review_queue(
    state: &AppState,
    actor: Actor,
    queue: ReviewQueueInput,
) -> Result<ReviewQueue> {
    let page = page(queue.page, queue.per_page)?;
    let filter = review_prompts::store::Filter {
        review_status: queue.review_status,
        priority: queue.priority,
        show_hidden: queue.show_hidden,
        person_id: None,
    };
    read(state, move |conn| {
        let (data, total) = review_prompts::list(conn, &actor, &filter, page)?;
        Ok(ReviewQueue {
            data,
            meta: page.meta(total),
        })
    })
    .await
}

pub(super) async fn pause_history(
    state: &AppState,
    actor: Actor,
    history: PauseHistoryInput,
) -> Result<PauseHistory> {
    let page = page(history.page, history.per_page)?;
    let filter = match (history.source_type, history.source_id) {
        (Some(source_type), Some(source_portable_id)) => Some(pause_periods::store::SourceFilter {
            source_type,
            source_portable_id,
        }),
        (None, None) => None,
        (None, Some(_)) => {
            return Err(ApiError::invalid(
                "source_type",
                "is required with source_id",
            ));
        }
        (Some(_), None) => {
            return Err(ApiError::invalid(
                "source_id",
                "is required with source_type",
            ));
        }
    };
    read(state, move |conn| {
        let (data, total) = pause_periods::list(conn, &actor, filter.as_ref(), page)?;
        Ok(PauseHistory {
            data,
            meta: page.meta(total),
        })
    })
    .await
}

pub(super) async fn record_medication_take(
    state: &AppState,
    actor: Actor,
    take: medication_takes::model::NewMedicationTake,
) -> Result<medication_takes::model::MedicationTakeCreated> {
    write(state, move |tx| {
        let recorded = medication_takes::create(tx, &actor, take)?;
        Ok(medication_takes::model::MedicationTakeCreated {
            data: recorded.take,
            meta: medication_takes::model::TakeMeta {
                warnings: recorded.warnings,
                next_dose_allowed_at: recorded.next_dose_allowed_at,
            },
        })
    })
    .await
}

pub(super) async fn mark_dose_not_taken(
    state: &AppState,
    actor: Actor,
    dose: NotTakenInput,
) -> Result<DoseOutcomeOutput> {
    let attrs = NotTakenAttrs {
        source_type: dose.source_type,
        source_id: dose.source_id,
        occurrence_key: dose.occurrence_key,
        outcome: Outcome::NotTaken,
        reason: dose.reason,
        note: dose.note,
    };
    write(state, move |tx| {
        let outcome = dose_outcomes::record_not_taken(tx, &actor, attrs)?;
        Ok(DoseOutcomeOutput {
            data: serde_json::to_value(outcome).map_err(ApiError::internal)?,
        })
    })
    .await
}

pub(super) async fn pause_medication_source(
    state: &AppState,
    actor: Actor,
    attrs: pause_periods::model::PausePeriodAttributes,
) -> Result<PausePeriodOutput> {
    write(state, move |tx| {
        Ok(PausePeriodOutput {
            data: pause_periods::create(tx, &actor, &attrs)?,
        })
    })
    .await
}

pub(super) async fn resume_medication_source(
    state: &AppState,
    actor: Actor,
    resume: ResumeInput,
) -> Result<PausePeriodOutput> {
    write(state, move |tx| {
        Ok(PausePeriodOutput {
            data: pause_periods::resume(tx, &actor, &resume.pause_period_id, &IfMatch(None))?,
        })
    })
    .await
}

pub(super) async fn record_stock_removal(
    state: &AppState,
    actor: Actor,
    removal: StockRemovalInput,
) -> Result<StockRemovalOutput> {
    write(state, move |tx| {
        Ok(StockRemovalOutput {
            data: stock_removals::create(
                tx,
                &actor,
                &removal.medication_id,
                removal.stock_removal,
            )?,
        })
    })
    .await
}

/// Runs `f` on one of the readers.
async fn read<T, F>(state: &AppState, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send + 'static,
{
    state.db.read(f).await
}

/// Runs `f` on the writer, in its transaction.
async fn write<T, F>(state: &AppState, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
{
    state.db.write(f).await
}

fn page(page: Option<u32>, per_page: Option<u32>) -> Result<Page> {
    let page = page.unwrap_or(1);
    let per_page = per_page.unwrap_or(20);
    if !(1..=Page::MAX_PAGE).contains(&page) {
        return Err(ApiError::invalid("page", "must be at least 1"));
    }
    if !(1..=Page::MAX_PER_PAGE).contains(&per_page) {
        return Err(ApiError::invalid("per_page", "must be from 1 to 100"));
    }
    Ok(Page { page, per_page })
}

fn summary(conn: &Connection, actor: &Actor) -> Result<HouseholdSummary> {
    let settings = crate::household::store::find(conn, actor.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?;
    let all = Page {
        page: 1,
        per_page: Page::MAX_PER_PAGE,
    };
    let people = people::list(conn, actor, None, all)?
        .0
        .into_iter()
        .map(|p| PersonFacts {
            id: p.id,
            portable_id: p.portable_id,
            name: p.name,
        })
        .collect();
    let mut medications_low_stock = Vec::new();
    let mut page = all;
    let medications_total = loop {
        let (batch, total) =
            medications::list(conn, actor, &crate::care::forecast::CarePlan, None, page)?;
        let done = batch.len() < page.per_page as usize;
        medications_low_stock.extend(
            batch
                .into_iter()
                .filter(|m| m.stock.low_stock || m.stock.out_of_stock)
                .map(|m| m.display_name),
        );
        if done {
            break total;
        }
        page.page += 1;
    };
    let (doses, meta) = crate::care::dose_occurrences::list(conn, actor, None, None)?;
    let count = |outcome: Outcome| doses.iter().filter(|d| d.outcome == outcome).count();
    Ok(HouseholdSummary {
        household: HouseholdFacts {
            id: actor.household_id,
            name: settings.name,
            time_zone: meta.time_zone.clone(),
        },
        people,
        medications_total,
        medications_low_stock,
        today: TodayFacts {
            date: meta.date.to_string(),
            expected: doses.len(),
            open: count(Outcome::Open),
            taken: count(Outcome::Taken),
            not_taken: count(Outcome::NotTaken),
        },
    })
}

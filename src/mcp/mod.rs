//! The MCP server for a household's own assistant: tools that read the
//! household and record doses, each a thin adapter over the same rule the
//! REST handler and the sync batch call, with the same permission checks
//! and warnings. The caller is the household app token of the HTTP request
//! carrying the call, resolved afresh for every call.

pub mod model;
pub mod routes;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::auth::Actor;
use crate::care::dose_occurrences::model::Outcome;
use crate::care::dose_occurrences::outcomes::{self as dose_outcomes, NotTakenAttrs};
use crate::care::{health_events, medication_takes, pause_periods};
use crate::domain::{IfMatch, Page};
use crate::error::{ApiError, Result};
use crate::household::people;
use crate::medicine::{medications, stock_removals};
use crate::reports::review_prompts;
use crate::state::AppState;
use model::*;

/// One tool: its name, what it does, whether it only reads, and its
/// input and output JSON schemas.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub input: fn() -> Arc<Map<String, Value>>,
    pub output: fn() -> Arc<Map<String, Value>>,
}

macro_rules! tool {
    ($name:literal, $read_only:expr, $input:ty, $output:ty, $description:literal) => {
        ToolSpec {
            name: $name,
            description: $description,
            read_only: $read_only,
            input: schema::<$input>,
            output: schema::<$output>,
        }
    };
}

/// Every tool, in the order they are listed.
pub const TOOLS: &[ToolSpec] = &[
    tool!(
        "get_household_summary",
        true,
        NoInput,
        HouseholdSummary,
        "The household, the people this token may see, how many medications there are and which are low on stock, and how today's expected doses stand."
    ),
    tool!(
        "list_expected_doses",
        true,
        DayInput,
        ExpectedDoses,
        "A day's expected doses (today unless date is given) of the people this token may see, or of one person, each with its occurrence_key and outcome (open, taken or not_taken)."
    ),
    tool!(
        "list_medications",
        true,
        PageInput,
        Medications,
        "The household's medications with current stock, low/out-of-stock flags and the run-out forecast (days_until_low_stock, days_until_out_of_stock)."
    ),
    tool!(
        "get_person_activity",
        true,
        PersonInput,
        PersonActivity,
        "A person's most recent medication takes and health events."
    ),
    tool!(
        "list_pause_history",
        true,
        PauseHistoryInput,
        PauseHistory,
        "Pause periods of schedules and direct assignments, newest first; optionally one source's history."
    ),
    tool!(
        "list_review_queue",
        true,
        ReviewQueueInput,
        ReviewQueue,
        "The medication review queue: prompts raised where a drug label's interaction text names another of a person's active medicines, highest priority first, for the people this token may see. Filter by review_status or priority; hidden prompts only with show_hidden."
    ),
    tool!(
        "record_medication_take",
        false,
        medication_takes::model::NewMedicationTake,
        medication_takes::model::MedicationTakeCreated,
        "Records that a dose was taken (needs record access to the person). Name the expected dose's occurrence_key to mark it taken. Stock is deducted; safety warnings (too soon, daily maximum) come back in meta.warnings and the take is recorded all the same."
    ),
    tool!(
        "mark_dose_not_taken",
        false,
        NotTakenInput,
        DoseOutcomeOutput,
        "Marks an expected dose as not taken (needs record access to the person); its occurrence_key comes from list_expected_doses."
    ),
    tool!(
        "pause_medication_source",
        false,
        pause_periods::model::PausePeriodAttributes,
        PausePeriodOutput,
        "Pauses a schedule or direct assignment with a reason (needs manage access to the person)."
    ),
    tool!(
        "resume_medication_source",
        false,
        ResumeInput,
        PausePeriodOutput,
        "Ends an open pause period, making its schedule or assignment active again (needs manage access to the person)."
    ),
    tool!(
        "record_stock_removal",
        false,
        StockRemovalInput,
        StockRemovalOutput,
        "Records stock leaving the cupboard other than as a dose (expired, damaged, lost, ...); needs the inventory management permission. Reuse the same submission_id when retrying."
    ),
];

/// The tools' names, for the capability document.
pub fn tool_names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name).collect()
}

/// A self-contained JSON Schema (2020-12) of `T`, an object at the root as
/// MCP requires.
fn schema<T: JsonSchema>() -> Arc<Map<String, Value>> {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(mut map) => {
            map.entry("type").or_insert_with(|| Value::from("object"));
            Arc::new(map)
        }
        _ => Arc::new(Map::new()),
    }
}

/// Calls tool `name` as `actor`; `Ok` holds its structured result.
pub async fn call(state: &AppState, actor: Actor, name: &str, arguments: Value) -> Result<Value> {
    match name {
        "get_household_summary" => {
            let NoInput {} = input(arguments)?;
            read(state, move |conn| summary(conn, &actor)).await
        }
        "list_expected_doses" => {
            let day: DayInput = input(arguments)?;
            let date = crate::care::dose_occurrences::parse_date_param(day.date.as_deref())?;
            read(state, move |conn| {
                let (data, meta) = crate::care::dose_occurrences::list(
                    conn,
                    &actor,
                    date,
                    day.person_id.as_ref(),
                )?;
                Ok(ExpectedDoses { data, meta })
            })
            .await
        }
        "list_medications" => {
            let paging: PageInput = input(arguments)?;
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
        "get_person_activity" => {
            let person: PersonInput = input(arguments)?;
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
        "list_review_queue" => {
            let queue: ReviewQueueInput = input(arguments)?;
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
        "list_pause_history" => {
            let history: PauseHistoryInput = input(arguments)?;
            let page = page(history.page, history.per_page)?;
            let filter = match (history.source_type, history.source_id) {
                (Some(source_type), Some(source_portable_id)) => {
                    Some(pause_periods::store::SourceFilter {
                        source_type,
                        source_portable_id,
                    })
                }
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
        "record_medication_take" => {
            let take: medication_takes::model::NewMedicationTake = input(arguments)?;
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
        "mark_dose_not_taken" => {
            let dose: NotTakenInput = input(arguments)?;
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
        "pause_medication_source" => {
            let attrs: pause_periods::model::PausePeriodAttributes = input(arguments)?;
            write(state, move |tx| {
                Ok(PausePeriodOutput {
                    data: pause_periods::create(tx, &actor, &attrs)?,
                })
            })
            .await
        }
        "resume_medication_source" => {
            let resume: ResumeInput = input(arguments)?;
            write(state, move |tx| {
                Ok(PausePeriodOutput {
                    data: pause_periods::resume(
                        tx,
                        &actor,
                        &resume.pause_period_id,
                        &IfMatch(None),
                    )?,
                })
            })
            .await
        }
        "record_stock_removal" => {
            let removal: StockRemovalInput = input(arguments)?;
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
        _ => Err(ApiError::NotFound(format!("no tool named {name}"))),
    }
}

/// A tool's arguments as its input type: a 422 naming the field otherwise.
fn input<T: DeserializeOwned>(arguments: Value) -> Result<T> {
    let bytes = serde_json::to_vec(&arguments).map_err(ApiError::internal)?;
    crate::http::extract::parse_json(&bytes)
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

async fn read<T, F>(state: &AppState, f: F) -> Result<Value>
where
    T: Serialize + Send + 'static,
    F: FnOnce(&rusqlite::Connection) -> Result<T> + Send + 'static,
{
    let out = state.db.read(f).await?;
    serde_json::to_value(out).map_err(ApiError::internal)
}

async fn write<T, F>(state: &AppState, f: F) -> Result<Value>
where
    T: Serialize + Send + 'static,
    F: FnOnce(&crate::db::WriteTx) -> Result<T> + Send + 'static,
{
    let out = state.db.write(f).await?;
    serde_json::to_value(out).map_err(ApiError::internal)
}

fn summary(conn: &rusqlite::Connection, actor: &Actor) -> Result<HouseholdSummary> {
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

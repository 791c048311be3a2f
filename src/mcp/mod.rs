//! The MCP server for a household's own assistant: tools that read the
//! household and record doses, each a thin adapter over the same rule the
//! REST handler and the sync batch call, with the same permission checks
//! and warnings. The caller is the household app token of the HTTP request
//! carrying the call, resolved afresh for every call.

pub mod model;
pub mod routes;
mod tools;

use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::auth::Actor;
use crate::care::{medication_takes, pause_periods};
use crate::error::{ApiError, Result};
use crate::state::AppState;
use model::*;

/// One tool: its name, what it does, whether it only reads, its input and
/// output JSON schemas, and its call.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub input: fn() -> Arc<Map<String, Value>>,
    pub output: fn() -> Arc<Map<String, Value>>,
    pub call: Call,
}

/// A tool's call as `actor` with the arguments it was given: they are read
/// as the tool's input type, and its output is answered as JSON.
pub type Call = for<'a> fn(&'a AppState, Actor, Value) -> Calling<'a>;
pub type Calling<'a> = Pin<Box<dyn Future<Output = Result<Value>> + Send + 'a>>;

/// A row of [`TOOLS`]: the input and output types given here are both the
/// schemas listed and the types `$call` takes and answers, so the two
/// cannot drift apart.
macro_rules! tool {
    ($name:literal, $read_only:expr, $input:ty, $output:ty, $call:path, $description:literal) => {
        ToolSpec {
            name: $name,
            description: $description,
            read_only: $read_only,
            input: schema::<$input>,
            output: schema::<$output>,
            call: {
                fn run(state: &AppState, actor: Actor, arguments: Value) -> Calling<'_> {
                    Box::pin(async move {
                        let input: $input = input(arguments)?;
                        let output: $output = $call(state, actor, input).await?;
                        serde_json::to_value(output).map_err(ApiError::internal)
                    })
                }
                run
            },
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
        tools::household_summary,
        "The household, the people this token may see, how many medications there are and which are low on stock, and how today's expected doses stand."
    ),
    tool!(
        "list_expected_doses",
        true,
        DayInput,
        ExpectedDoses,
        tools::expected_doses,
        "A day's expected doses (today unless date is given) of the people this token may see, or of one person, each with its occurrence_key and outcome (open, taken or not_taken)."
    ),
    tool!(
        "list_medications",
        true,
        PageInput,
        Medications,
        tools::medications,
        "The household's medications with current stock, low/out-of-stock flags and the run-out forecast (days_until_low_stock, days_until_out_of_stock)."
    ),
    tool!(
        "get_person_activity",
        true,
        PersonInput,
        PersonActivity,
        tools::person_activity,
        "A person's most recent medication takes and health events."
    ),
    tool!(
        "list_pause_history",
        true,
        PauseHistoryInput,
        PauseHistory,
        tools::pause_history,
        "Pause periods of schedules and direct assignments, newest first; optionally one source's history."
    ),
    tool!(
        "list_review_queue",
        true,
        ReviewQueueInput,
        ReviewQueue,
        tools::review_queue,
        "The medication review queue: prompts raised where a drug label's interaction text names another of a person's active medicines, highest priority first, for the people this token may see. Filter by review_status or priority; hidden prompts only with show_hidden."
    ),
    tool!(
        "record_medication_take",
        false,
        medication_takes::model::NewMedicationTake,
        medication_takes::model::MedicationTakeCreated,
        tools::record_medication_take,
        "Records that a dose was taken (needs record access to the person). Name the expected dose's occurrence_key to mark it taken. Stock is deducted; safety warnings (too soon, daily maximum) come back in meta.warnings and the take is recorded all the same."
    ),
    tool!(
        "mark_dose_not_taken",
        false,
        NotTakenInput,
        DoseOutcomeOutput,
        tools::mark_dose_not_taken,
        "Marks an expected dose as not taken (needs record access to the person); its occurrence_key comes from list_expected_doses."
    ),
    tool!(
        "pause_medication_source",
        false,
        pause_periods::model::PausePeriodAttributes,
        PausePeriodOutput,
        tools::pause_medication_source,
        "Pauses a schedule or direct assignment with a reason (needs manage access to the person)."
    ),
    tool!(
        "resume_medication_source",
        false,
        ResumeInput,
        PausePeriodOutput,
        tools::resume_medication_source,
        "Ends an open pause period, making its schedule or assignment active again (needs manage access to the person)."
    ),
    tool!(
        "record_stock_removal",
        false,
        StockRemovalInput,
        StockRemovalOutput,
        tools::record_stock_removal,
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
    match TOOLS.iter().find(|tool| tool.name == name) {
        Some(tool) => (tool.call)(state, actor, arguments).await,
        None => Err(ApiError::NotFound(format!("no tool named {name}"))),
    }
}

/// A tool's arguments as its input type: a 422 naming the field otherwise.
fn input<T: DeserializeOwned>(arguments: Value) -> Result<T> {
    let bytes = serde_json::to_vec(&arguments).map_err(ApiError::internal)?;
    crate::http::extract::parse_json(&bytes)
}

//! The care plan and what happens around it: health events, notification
//! preferences, schedules, direct assignments, takes and pauses.

pub mod dose_occurrences;
pub mod forecast;
pub mod forecast_store;
pub mod health_events;
pub mod medication_takes;
pub mod notification_preferences;
pub mod occurrence_key;
pub mod pause_periods;
pub mod person_medications;
pub mod plan;
pub mod portable_rows;
pub mod schedule_config;
pub mod schedules;
pub mod source_routes;
pub mod source_row;
pub mod sources;

use crate::http::openapi::Api;

pub fn routes(api: Api) -> Api {
    let api = health_events::routes::routes(api);
    let api = notification_preferences::routes::routes(api);
    let api = schedules::routes::routes(api);
    let api = pause_periods::routes::routes(api);
    let api = person_medications::routes::routes(api);
    let api = medication_takes::routes::routes(api);
    dose_occurrences::routes::routes(api)
}

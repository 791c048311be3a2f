//! Medication review evidence and prompts, and the reports of a person's
//! health history and reviews (JSON and PDF).

pub mod documents;
pub mod evidence;
pub mod names;
pub mod review_prompts;

use crate::http::openapi::Api;

pub fn routes(api: Api) -> Api {
    let api = review_prompts::routes::routes(api);
    documents::routes::routes(api)
}

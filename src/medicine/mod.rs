//! Medicines: medications, dosage options and stock.

pub mod dosage_options;
pub mod forecast;
pub mod locations;
pub mod medications;
pub mod portable_rows;
pub mod stock;
pub mod stock_removals;
pub mod vocab;

use crate::http::openapi::Api;

pub fn routes(api: Api) -> Api {
    let api = medications::routes::routes(api);
    let api = dosage_options::routes::routes(api);
    let api = locations::routes(api);
    stock_removals::routes::routes(api)
}

//! Time zone names as the bundled tz database spells them.

use crate::error::{ApiError, Result};

/// The bundled database's own spelling of a time zone name: the lookup
/// forgives case (`europe/london`), and what is stored and answered is
/// always the canonical `Europe/London`. The message never repeats the input.
pub fn canonical_time_zone(name: &str) -> Result<String> {
    jiff::tz::TimeZone::get(name.trim())
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .ok_or_else(|| ApiError::invalid("time_zone", "must be a known IANA time zone name"))
}

/// This machine's time zone, the default a set-up offers; UTC when the
/// system names none.
pub fn system_time_zone() -> String {
    jiff::tz::TimeZone::try_system()
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .unwrap_or_else(|| "UTC".to_string())
}

//! Where the web app lives, named apart from the pages so that the set-up
//! page can send its visitor there without reaching back into `web`.

/// Where the app lives in the browser's address bar; every path under it is
/// a view of the one shell (deep links), including the OAuth redirect
/// (`config::DEFAULT_WEB_REDIRECT_PATH`).
pub const APP_PATH: &str = "/app";

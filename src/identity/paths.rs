//! Where identity's endpoints sit, named apart so that every file of the
//! area can say them without reaching for the area's root.

/// The API's base path (`http::API_PREFIX`), which the OAuth endpoints sit
/// under; named here so that identity does not import the router's module.
pub const API_BASE: &str = "/api/v1";

/// Where RFC 8414 puts the metadata of an issuer without a path.
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

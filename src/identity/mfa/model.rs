//! Multi-factor shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The account's second factors.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MfaStatus {
    /// A confirmed TOTP authenticator is required at sign-in
    pub totp_enabled: bool,
    /// One-time recovery codes not used yet
    #[schemars(range(min = 0))]
    pub recovery_codes_remaining: i64,
}

/// A new TOTP secret, shown once; confirm it with a first code.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TotpEnrolment {
    /// The shared secret in base32, for typing into an authenticator app
    #[schemars(length(min = 16))]
    pub secret: String,
    /// The same secret as an otpauth:// Key URI (for a QR code)
    #[schemars(extend("pattern" = "^otpauth://totp/"))]
    pub otpauth_uri: String,
    #[schemars(extend("const" = "SHA1"))]
    pub algorithm: &'static str,
    #[schemars(extend("const" = 6))]
    pub digits: u32,
    #[schemars(extend("const" = 30))]
    pub period: u64,
}

/// Ten one-time recovery codes, shown once; each replaces a TOTP code once.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RecoveryCodes {
    #[schemars(length(min = 10, max = 10))]
    pub recovery_codes: Vec<String>,
}

/// `{"mfa": {"password": "..."}}`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpEnrolmentRequest {
    pub mfa: PasswordProof,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordProof {
    /// The account's current password
    // Read as optional so that a missing one is the 422 naming
    // `mfa.password` that a wrong one is, yet documented as required.
    #[schemars(required, length(min = 1, max = 1024))]
    pub password: Option<String>,
}

/// `{"mfa": {"password": "...", "code": "123456"}}`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpConfirmRequest {
    pub mfa: TotpConfirmation,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpConfirmation {
    /// The account's current password
    #[schemars(required, length(min = 1, max = 1024))]
    pub password: Option<String>,
    /// The authenticator's current six-digit code
    #[schemars(length(min = 1, max = 64))]
    pub code: String,
}

/// `{"mfa": {"password": "...", "code": "123456"}}`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpDisableRequest {
    pub mfa: SecondFactorProof,
}

/// `{"mfa": {"password": "...", "code": "123456"}}`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryCodesRequest {
    pub mfa: SecondFactorProof,
}

/// The password and the second factor it guards.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecondFactorProof {
    /// The account's current password
    #[schemars(required, length(min = 1, max = 1024))]
    pub password: Option<String>,
    /// The authenticator's current code, or an unused recovery code
    #[schemars(length(min = 1, max = 64))]
    pub code: String,
}

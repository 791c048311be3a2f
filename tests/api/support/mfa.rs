//! TOTP multi-factor: an enrolment confirmed with its first code, and the
//! codes of the secret it showed.

use pillbox::identity::mfa::totp;

use super::{PASSWORD, TestApp};

/// RFC 4648 base32 (no padding), as the enrolment shows the secret.
pub fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0);
    for c in text.chars() {
        let value = ALPHABET.find(c).expect("base32") as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

/// The Unix time in seconds, as the authenticator's codes count it.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Enrols and confirms TOTP for the owner; answers (secret, recovery codes).
pub async fn enrol(app: &TestApp, access: &str) -> (Vec<u8>, Vec<String>) {
    let started = app
        .post(
            "/api/v1/auth/mfa/totp",
            access,
            serde_json::json!({"mfa": {"password": PASSWORD}}),
        )
        .await;
    started.assert_status(201);
    let shown = started.data()["secret"].as_str().unwrap().to_string();
    assert!(
        started.data()["otpauth_uri"]
            .as_str()
            .unwrap()
            .starts_with("otpauth://totp/")
    );
    let secret = base32_decode(&shown);
    assert_eq!(secret.len(), 20);
    let confirmed = app
        .post(
            "/api/v1/auth/mfa/totp/confirm",
            access,
            serde_json::json!({"mfa": {"password": PASSWORD, "code": totp::code_at(&secret, now())}}),
        )
        .await;
    confirmed.assert_status(200);
    let codes: Vec<String> = confirmed.data()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes.len(), 10);
    (secret, codes)
}

//! Opaque bearer tokens: `<prefix><selector>_<secret>` (`pbx_app_` for
//! household app tokens, `pbx_at_`/`pbx_rt_` for sign-in access and refresh
//! tokens). The selector (public,
//! 16 hex digits) finds the row; only a SHA-256 digest of the secret is stored
//! and it is compared in constant time. The prefix makes a leaked token
//! recognisable.

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const APP_TOKEN_PREFIX: &str = "pbx_app_";
pub const ACCESS_TOKEN_PREFIX: &str = "pbx_at_";
pub const REFRESH_TOKEN_PREFIX: &str = "pbx_rt_";
const SELECTOR_LEN: usize = 16;
const SECRET_BYTES: usize = 32;

pub struct NewToken {
    /// Shown to the user once, never stored.
    pub token: String,
    pub selector: String,
    pub secret_sha256: Vec<u8>,
}

pub fn generate(prefix: &str) -> NewToken {
    let mut selector_bytes = [0u8; SELECTOR_LEN / 2];
    let mut secret_bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut selector_bytes).expect("operating system random source");
    getrandom::fill(&mut secret_bytes).expect("operating system random source");
    let selector: String = selector_bytes.iter().map(|b| format!("{b:02x}")).collect();
    let secret = URL_SAFE_NO_PAD.encode(secret_bytes);
    NewToken {
        token: format!("{prefix}{selector}_{secret}"),
        secret_sha256: digest(&secret),
        selector,
    }
}

fn digest(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// The bearer credential of a request, if it sent one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

pub struct Presented<'a> {
    pub selector: &'a str,
    secret: &'a str,
}

/// Splits a presented app token; `None` when it is not one of ours.
pub fn parse(token: &str) -> Option<Presented<'_>> {
    parse_with(APP_TOKEN_PREFIX, token)
}

/// Splits a presented token of the kind `prefix` names.
pub fn parse_with<'a>(prefix: &str, token: &'a str) -> Option<Presented<'a>> {
    let rest = token.strip_prefix(prefix)?;
    let selector = rest.get(..SELECTOR_LEN)?;
    let secret = rest.get(SELECTOR_LEN..)?.strip_prefix('_')?;
    if !selector.bytes().all(|b| b.is_ascii_hexdigit()) || secret.is_empty() {
        return None;
    }
    Some(Presented { selector, secret })
}

impl Presented<'_> {
    pub fn matches(&self, stored_sha256: &[u8]) -> bool {
        digest(self.secret).ct_eq(stored_sha256).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_token_parses_and_matches_only_its_digest() {
        let t = generate(APP_TOKEN_PREFIX);
        assert!(t.token.starts_with("pbx_app_"));
        let p = parse(&t.token).unwrap();
        assert_eq!(p.selector, t.selector);
        assert!(p.matches(&t.secret_sha256));
        let other = generate(APP_TOKEN_PREFIX);
        assert!(!p.matches(&other.secret_sha256));
        assert!(parse("pbx_app_short").is_none());
        assert!(parse("Bearer nonsense").is_none());
    }
}

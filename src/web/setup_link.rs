//! The live set-up token of a server with no household: only its SHA-256
//! digest, in memory, so a restart forgets it. Apart from the page code so
//! that `AppState` can hold it without importing the handlers.

use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The digest of the live set-up token, if one is on offer.
#[derive(Default)]
pub struct SetupLink(Mutex<Option<[u8; 32]>>);

impl SetupLink {
    /// Makes a new token (replacing any earlier one) and returns it.
    pub fn issue(&self) -> String {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("operating system random source");
        let token = URL_SAFE_NO_PAD.encode(bytes);
        *self.0.lock().expect("set-up link lock") = Some(digest(&token));
        token
    }

    pub fn matches(&self, token: &str) -> bool {
        let presented = digest(token);
        self.0
            .lock()
            .expect("set-up link lock")
            .is_some_and(|live| bool::from(live.ct_eq(&presented)))
    }

    pub fn spend(&self) {
        *self.0.lock().expect("set-up link lock") = None;
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

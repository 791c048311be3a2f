//! The files of the web app, embedded in the binary, and the prefix that
//! names this build's copy of them (the pages, the shell and the set-up
//! page, link their scripts and styles under it).

use std::sync::OnceLock;

use rust_embed::Embed;
use sha2::{Digest, Sha256};

#[derive(Embed)]
#[folder = "assets/"]
#[exclude = "fonts/*"]
pub(super) struct Assets;

/// Versioned asset URLs: `/v/<build>/<file>`. A new build changes the
/// prefix, so these can be cached for a year while the shell is not cached.
pub(super) const VERSIONED: &str = "/v";

/// A digest of every embedded file: the `/v/` prefix of this build.
pub fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut names: Vec<_> = Assets::iter().collect();
        names.sort();
        let mut digest = Sha256::new();
        for name in names {
            if let Some(file) = Assets::get(&name) {
                digest.update(name.as_bytes());
                digest.update(file.metadata.sha256_hash());
            }
        }
        digest.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    })
}

pub fn versioned_prefix() -> String {
    format!("{VERSIONED}/{}", build_id())
}

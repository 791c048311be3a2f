//! Occurrence keys name one expected dose: its source, its window and its
//! position in the window. The server signs them (HMAC-SHA256 with this
//! installation's secret), so a key a client sends back is one this server
//! issued for that household's source, never a forged or foreign one.
//!
//! Form: `<payload>.<mac>`, both base64url; payload is
//! `<source_type>|<source_portable_id>|<window_starts_on>|<position>`.

use std::cell::RefCell;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use jiff::civil::Date;
use rusqlite::Connection;
use sha2::Sha256;

use crate::db::instance;
use crate::domain::timestamp::push_digits;
use crate::error::{ApiError, Result};

/// What an occurrence key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    /// `schedule` or `person_medication`.
    pub source_type: String,
    pub source_portable_id: String,
    pub window_starts_on: Date,
    /// 1-based position of the dose in its window.
    pub position: u32,
}

fn mac(secret: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes keys of any length")
}

/// The payload text, written without the formatter: a list of expected
/// doses signs one per dose.
fn payload(source_type: &str, source_portable_id: &str, window: Date, position: u32) -> String {
    let mut text = String::with_capacity(source_type.len() + source_portable_id.len() + 24);
    text.push_str(source_type);
    text.push('|');
    text.push_str(source_portable_id);
    text.push('|');
    push_date(&mut text, window);
    text.push('|');
    let width = position.checked_ilog10().map_or(1, |l| l + 1);
    push_digits(&mut text, i64::from(position), width);
    text
}

/// `YYYY-MM-DD`, as `Date`'s `Display` writes it.
fn push_date(text: &mut String, date: Date) {
    let year = date.year();
    if !(0..=9999).contains(&year) {
        text.push_str(&date.to_string());
        return;
    }
    push_digits(text, i64::from(year), 4);
    text.push('-');
    push_digits(text, i64::from(date.month()), 2);
    text.push('-');
    push_digits(text, i64::from(date.day()), 2);
}

/// Signs with a given secret (the projection loads it once per request).
pub fn sign_with(secret: &[u8], occurrence: &Occurrence) -> String {
    Signer::new(secret).sign(occurrence)
}

/// Signs many occurrences with one secret, keying the MAC once.
#[derive(Clone)]
pub struct Signer(Hmac<Sha256>);

impl Signer {
    pub fn new(secret: &[u8]) -> Signer {
        Signer(mac(secret))
    }

    pub fn sign(&self, o: &Occurrence) -> String {
        self.sign_parts(
            &o.source_type,
            &o.source_portable_id,
            o.window_starts_on,
            o.position,
        )
    }

    /// The key of an occurrence given by its parts (nothing copied first).
    pub fn sign_parts(
        &self,
        source_type: &str,
        source_portable_id: &str,
        window_starts_on: Date,
        position: u32,
    ) -> String {
        let payload = payload(source_type, source_portable_id, window_starts_on, position);
        let mut m = self.0.clone();
        m.update(payload.as_bytes());
        let tag = m.finalize().into_bytes();
        // base64 of the payload, '.', base64 of the 32-byte tag (43).
        let mut key = String::with_capacity(payload.len().div_ceil(3) * 4 + 1 + 44);
        URL_SAFE_NO_PAD.encode_string(payload.as_bytes(), &mut key);
        key.push('.');
        URL_SAFE_NO_PAD.encode_string(tag, &mut key);
        key
    }
}

/// Keys signed at most before [`KeptKeys`] starts again empty: a day of a
/// large household is a few hundred, and each reader thread keeps its own
/// (about 250 bytes a key), so browsing many days holds at most about
/// 250 KB a reader until the next commit.
const KEPT_KEYS: usize = 1024;

/// A signer that keeps the keys it made. A household's plan is kept on a
/// reader thread until the next commit, and every read of a day signs the
/// same doses again: one HMAC-SHA256 each, which without SHA instructions
/// (a Raspberry Pi 4 has none) was a third of a day's projection.
pub struct KeptKeys {
    signer: Signer,
    /// By place, with the source's portable id the key was signed for.
    keys: RefCell<foldhash::HashMap<Place, (String, String)>>,
}

/// Where a dose is: source type, source id, window and position.
type Place = (&'static str, i64, Date, u32);

impl KeptKeys {
    pub fn new(signer: Signer) -> KeptKeys {
        KeptKeys {
            signer,
            keys: RefCell::default(),
        }
    }

    /// The key of an occurrence (see [`Signer::sign_parts`]), signed once.
    pub fn key(
        &self,
        (source_type, source_id): (&'static str, i64),
        source_portable_id: &str,
        window_starts_on: Date,
        position: u32,
    ) -> String {
        let at = (source_type, source_id, window_starts_on, position);
        let mut keys = self.keys.borrow_mut();
        if let Some((portable_id, key)) = keys.get(&at)
            && portable_id == source_portable_id
        {
            return key.clone();
        }
        let key =
            self.signer
                .sign_parts(source_type, source_portable_id, window_starts_on, position);
        if keys.len() >= KEPT_KEYS {
            keys.clear();
        }
        keys.insert(at, (source_portable_id.to_string(), key.clone()));
        key
    }
}

pub fn secret(conn: &Connection) -> Result<Vec<u8>> {
    instance::secret(conn, instance::OCCURRENCE_KEY_SECRET)
}

pub fn sign(conn: &Connection, occurrence: &Occurrence) -> Result<String> {
    Ok(sign_with(&secret(conn)?, occurrence))
}

/// Checks the signature (in constant time) and decodes the key. Any
/// tampering, truncation or foreign key is a 422 naming `occurrence_key`.
pub fn verify_with(secret: &[u8], key: &str) -> Result<Occurrence> {
    let invalid = || {
        ApiError::invalid(
            "occurrence_key",
            "is not an occurrence key issued by this server",
        )
    };
    let (payload_b64, tag_b64) = key.split_once('.').ok_or_else(invalid)?;
    let payload = URL_SAFE_NO_PAD.decode(payload_b64).map_err(|_| invalid())?;
    let tag = URL_SAFE_NO_PAD.decode(tag_b64).map_err(|_| invalid())?;
    let mut m = mac(secret);
    m.update(&payload);
    m.verify_slice(&tag).map_err(|_| invalid())?;
    let text = String::from_utf8(payload).map_err(|_| invalid())?;
    let mut parts = text.split('|');
    let (Some(source_type), Some(source), Some(window), Some(position), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(invalid());
    };
    Ok(Occurrence {
        source_type: source_type.to_string(),
        source_portable_id: source.to_string(),
        window_starts_on: window.parse().map_err(|_| invalid())?,
        position: position.parse().map_err(|_| invalid())?,
    })
}

pub fn verify(conn: &Connection, key: &str) -> Result<Occurrence> {
    verify_with(&secret(conn)?, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Occurrence {
        Occurrence {
            source_type: "schedule".into(),
            source_portable_id: "0192a5b0-0000-7000-8000-000000000001".into(),
            window_starts_on: "2026-03-29".parse().unwrap(),
            position: 2,
        }
    }

    #[test]
    fn signed_keys_verify_and_forged_ones_do_not() {
        let key = sign_with(b"secret one", &sample());
        assert_eq!(verify_with(b"secret one", &key).unwrap(), sample());
        assert!(verify_with(b"another installation", &key).is_err());
        let (payload, tag) = key.split_once('.').unwrap();
        let mut other = sample();
        other.position = 3;
        let forged_payload = URL_SAFE_NO_PAD.encode(payload_text(&other));
        assert!(verify_with(b"secret one", &format!("{forged_payload}.{tag}")).is_err());
        assert!(verify_with(b"secret one", payload).is_err());
        assert!(verify_with(b"secret one", "").is_err());
    }

    #[test]
    fn kept_keys_are_the_keys_the_signer_makes() {
        let kept = KeptKeys::new(Signer::new(b"secret one"));
        let o = sample();
        let date = o.window_starts_on;
        let signed = |id: &str, position| {
            sign_with(
                b"secret one",
                &Occurrence {
                    source_portable_id: id.into(),
                    position,
                    ..sample()
                },
            )
        };
        let first = kept.key(("schedule", 7), &o.source_portable_id, date, 2);
        assert_eq!(first, signed(&o.source_portable_id, 2));
        assert_eq!(
            kept.key(("schedule", 7), &o.source_portable_id, date, 2),
            first
        );
        assert_eq!(
            kept.key(("schedule", 7), &o.source_portable_id, date, 3),
            signed(&o.source_portable_id, 3)
        );
        // The same place under another portable id is signed for that id.
        assert_eq!(
            kept.key(("schedule", 7), "another-source", date, 2),
            signed("another-source", 2)
        );
        assert_eq!(verify_with(b"secret one", &first).unwrap(), o);
    }

    fn payload_text(o: &Occurrence) -> String {
        payload(
            &o.source_type,
            &o.source_portable_id,
            o.window_starts_on,
            o.position,
        )
    }

    #[test]
    fn the_payload_is_written_as_the_formatter_writes_it() {
        for (date, position) in [
            ("2026-03-29", 2),
            ("0001-01-09", 10),
            ("9999-12-31", 4_294_967_295),
            ("-000001-06-01", 0),
            ("2024-02-29", 101),
        ] {
            let window: Date = date.parse().unwrap();
            let o = Occurrence {
                window_starts_on: window,
                position,
                ..sample()
            };
            let expected = format!(
                "{}|{}|{}|{}",
                o.source_type, o.source_portable_id, o.window_starts_on, o.position
            );
            assert_eq!(payload_text(&o), expected);
        }
    }
}

//! The encrypted portable envelope (`service.portable.encrypted.v1`): a
//! JSON object holding an AES-256-GCM ciphertext of the plaintext payload,
//! the argon2id parameters and salt its key was derived with, the nonce and
//! the hex SHA-256 checksum of the plaintext. Binary fields are base64.
//!
//! Every envelope field except the ciphertext is bound into the cipher as
//! associated data, so a change to any byte of any field (salt, nonce,
//! checksum, parameters, even `encrypted_at`) fails authentication. Every
//! failure to open an envelope is the same 422 on `bundle`: telling a wrong
//! passphrase from a changed byte would only help someone guessing.

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::Timestamp;
use crate::error::{ApiError, Result};

pub const FORMAT: &str = "service.portable.encrypted.v1";
pub const CIPHER: &str = "aes-256-gcm";
pub const KDF: &str = "argon2id";
/// The header that alone carries the passphrase (never a URL or a body).
pub const PASSPHRASE_HEADER: &str = "X-Service-Portable-Passphrase";
/// Shorter passphrases fall to a guessing run against a stolen bundle.
pub const MIN_PASSPHRASE_CHARS: usize = 12;
pub const MAX_PASSPHRASE_BYTES: usize = 1024;

const SALT_LEN: usize = 16;
const NONCE_LEN: usize = 12;
const KEY_LEN: usize = 32;

/// argon2id cost of new envelopes: the OWASP minimum for argon2id (19 MiB,
/// 2 passes, 1 lane), affordable on a Raspberry Pi.
pub const DEFAULT_PARAMS: KdfParams = KdfParams {
    memory_kib: 19 * 1024,
    iterations: 2,
    parallelism: 1,
};
/// Parameters an envelope may ask for: a hostile bundle must not make the
/// server spend gigabytes or minutes deriving a key.
const MAX_MEMORY_KIB: u32 = 256 * 1024;
const MAX_ITERATIONS: u32 = 10;
const MAX_PARALLELISM: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KdfParams {
    /// Memory cost in KiB.
    #[schemars(range(min = 8, max = 262144))]
    pub memory_kib: u32,
    #[schemars(range(min = 1, max = 10))]
    pub iterations: u32,
    #[schemars(range(min = 1, max = 4))]
    pub parallelism: u32,
}

/// The envelope as it travels. The whole envelope is sensitive health data.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[schemars(extend("const" = FORMAT))]
    pub format: String,
    pub encrypted_at: Timestamp,
    #[schemars(extend("const" = CIPHER))]
    pub cipher: String,
    #[schemars(extend("const" = KDF))]
    pub kdf: String,
    pub kdf_params: KdfParams,
    /// Base64 of the 16-byte argon2id salt.
    pub salt: String,
    /// Base64 of the 12-byte AES-GCM nonce.
    pub nonce: String,
    /// Lower-case hex SHA-256 of the plaintext payload.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub checksum: String,
    /// Base64 of the AES-256-GCM ciphertext with its 16-byte tag.
    pub ciphertext: String,
}

/// A passphrase checked for length; never logged, never echoed.
pub struct Passphrase(String);

impl Passphrase {
    /// 422 naming the header when it is missing or too short.
    pub fn new(text: Option<&str>) -> Result<Passphrase> {
        let Some(text) = text else {
            return Err(ApiError::invalid(PASSPHRASE_HEADER, "is required"));
        };
        if text.chars().count() < MIN_PASSPHRASE_CHARS {
            return Err(ApiError::invalid(
                PASSPHRASE_HEADER,
                format!("must be at least {MIN_PASSPHRASE_CHARS} characters"),
            ));
        }
        if text.len() > MAX_PASSPHRASE_BYTES {
            return Err(ApiError::invalid(
                PASSPHRASE_HEADER,
                format!("must be at most {MAX_PASSPHRASE_BYTES} bytes"),
            ));
        }
        Ok(Passphrase(text.to_string()))
    }
}

impl std::fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Passphrase(..)")
    }
}

/// The one 422 of a bundle that cannot be opened.
pub fn unreadable() -> ApiError {
    ApiError::invalid(
        "bundle",
        "could not be opened: the passphrase is wrong or the bundle is damaged or was changed",
    )
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("operating system random source");
    bytes
}

fn derive_key(passphrase: &Passphrase, salt: &[u8], params: KdfParams) -> Result<[u8; KEY_LEN]> {
    let argon_params = argon2::Params::new(
        params.memory_kib,
        params.iterations,
        params.parallelism,
        Some(KEY_LEN),
    )
    .map_err(|_| unreadable())?;
    let argon = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon_params,
    );
    let mut key = [0u8; KEY_LEN];
    argon
        .hash_password_into(passphrase.0.as_bytes(), salt, &mut key)
        .map_err(|_| unreadable())?;
    Ok(key)
}

/// Associated data: every field but the ciphertext, in a fixed order.
fn associated_data(envelope: &Envelope) -> Vec<u8> {
    format!(
        "{}\n{}\n{}\n{}\n{}:{}:{}\n{}\n{}\n{}",
        envelope.format,
        envelope.encrypted_at,
        envelope.cipher,
        envelope.kdf,
        envelope.kdf_params.memory_kib,
        envelope.kdf_params.iterations,
        envelope.kdf_params.parallelism,
        envelope.salt,
        envelope.nonce,
        envelope.checksum,
    )
    .into_bytes()
}

/// Encrypts `plaintext` (consumed: the ciphertext is built in its buffer).
pub fn seal(plaintext: Vec<u8>, passphrase: &Passphrase) -> Result<Envelope> {
    seal_with(plaintext, passphrase, DEFAULT_PARAMS)
}

pub fn seal_with(
    mut buffer: Vec<u8>,
    passphrase: &Passphrase,
    params: KdfParams,
) -> Result<Envelope> {
    let salt = random::<SALT_LEN>();
    let nonce = random::<NONCE_LEN>();
    let key = derive_key(passphrase, &salt, params)?;
    let mut envelope = Envelope {
        format: FORMAT.into(),
        encrypted_at: Timestamp::now(),
        cipher: CIPHER.into(),
        kdf: KDF.into(),
        kdf_params: params,
        salt: BASE64.encode(salt),
        nonce: BASE64.encode(nonce),
        checksum: hex(&Sha256::digest(&buffer)),
        ciphertext: String::new(),
    };
    let aad = associated_data(&envelope);
    let cipher = Aes256Gcm::new_from_slice(&key).map_err(ApiError::internal)?;
    cipher
        .encrypt_in_place(&Nonce::from(nonce), &aad, &mut buffer)
        .map_err(|_| ApiError::internal("encryption failed"))?;
    envelope.ciphertext = BASE64.encode(&buffer);
    Ok(envelope)
}

fn decode_exact<const N: usize>(text: &str) -> Result<[u8; N]> {
    let bytes = BASE64.decode(text).map_err(|_| unreadable())?;
    bytes.try_into().map_err(|_| unreadable())
}

/// Decrypts an envelope and checks its checksum. The ciphertext's text is
/// taken out of the envelope and dropped once decoded, and the plaintext is
/// decrypted in the decoded buffer, so a 32 MiB bundle is not held thrice.
pub fn open(mut envelope: Envelope, passphrase: &Passphrase) -> Result<Vec<u8>> {
    if envelope.format != FORMAT || envelope.cipher != CIPHER || envelope.kdf != KDF {
        return Err(unreadable());
    }
    let p = envelope.kdf_params;
    if p.memory_kib > MAX_MEMORY_KIB
        || p.iterations > MAX_ITERATIONS
        || p.parallelism == 0
        || p.parallelism > MAX_PARALLELISM
    {
        return Err(unreadable());
    }
    let checksum_ok = envelope.checksum.len() == 64
        && envelope
            .checksum
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !checksum_ok {
        return Err(unreadable());
    }
    let salt = decode_exact::<SALT_LEN>(&envelope.salt)?;
    let nonce = decode_exact::<NONCE_LEN>(&envelope.nonce)?;
    let ciphertext_text = std::mem::take(&mut envelope.ciphertext);
    let mut buffer = BASE64.decode(&ciphertext_text).map_err(|_| unreadable())?;
    drop(ciphertext_text);
    let key = derive_key(passphrase, &salt, p)?;
    let aad = associated_data(&envelope);
    let cipher = Aes256Gcm::new_from_slice(&key).map_err(ApiError::internal)?;
    cipher
        .decrypt_in_place(&Nonce::from(nonce), &aad, &mut buffer)
        .map_err(|_| unreadable())?;
    // Authenticated already; the checksum still guards a bundle sealed by
    // another implementation that hashed something other than it encrypted.
    let digest = Sha256::digest(&buffer);
    let expected = envelope.checksum.as_bytes();
    let actual = hex(&digest);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(actual.as_bytes(), expected)) {
        return Err(unreadable());
    }
    Ok(buffer)
}

/// Parses an envelope from a request body; anything that is not one is the
/// same 422 as a damaged one.
pub fn parse(body: &[u8]) -> Result<Envelope> {
    serde_json::from_slice(body).map_err(|_| unreadable())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cheap parameters so the every-byte loops stay fast.
    const TEST_PARAMS: KdfParams = KdfParams {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };

    fn passphrase(text: &str) -> Passphrase {
        Passphrase::new(Some(text)).unwrap()
    }

    fn sealed() -> Envelope {
        seal_with(
            br#"{"format":"service.portable.v1","records":{}}"#.to_vec(),
            &passphrase("correct horse battery"),
            TEST_PARAMS,
        )
        .unwrap()
    }

    fn is_unreadable(result: Result<Vec<u8>>) -> bool {
        match result {
            Err(ApiError::Validation { errors, .. }) => errors.contains_key("bundle"),
            _ => false,
        }
    }

    #[test]
    fn round_trip_with_default_parameters() {
        let plain = b"{\"hello\":\"world\"}".to_vec();
        let envelope = seal(plain.clone(), &passphrase("a long passphrase")).unwrap();
        assert_eq!(envelope.format, FORMAT);
        assert_eq!(envelope.kdf_params, DEFAULT_PARAMS);
        assert_eq!(envelope.checksum, hex(&Sha256::digest(&plain)));
        let text = serde_json::to_vec(&envelope).unwrap();
        let opened = open(parse(&text).unwrap(), &passphrase("a long passphrase")).unwrap();
        assert_eq!(opened, plain);
    }

    #[test]
    fn two_seals_differ_in_salt_nonce_and_ciphertext() {
        let (a, b) = (sealed(), sealed());
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
        assert_eq!(a.checksum, b.checksum);
    }

    #[test]
    fn wrong_passphrase_is_unreadable() {
        assert!(is_unreadable(open(
            sealed(),
            &passphrase("correct horse battery!")
        )));
    }

    #[test]
    fn short_or_missing_passphrase_names_the_header() {
        for text in [None, Some("short"), Some("elevenchars")] {
            match Passphrase::new(text) {
                Err(ApiError::Validation { errors, .. }) => {
                    assert!(errors.contains_key(PASSPHRASE_HEADER))
                }
                other => panic!("expected a 422, got {other:?}"),
            }
        }
        assert!(Passphrase::new(Some("twelve chars")).is_ok());
    }

    /// Flips bits of every byte of one base64 field and expects refusal.
    fn every_byte_of(field: fn(&mut Envelope) -> &mut String) {
        let good = sealed();
        let bytes = BASE64.decode(field(&mut good.clone()).as_str()).unwrap();
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80] {
                let mut changed = bytes.clone();
                changed[i] ^= flip;
                let mut bad = good.clone();
                *field(&mut bad) = BASE64.encode(&changed);
                assert!(
                    is_unreadable(open(bad, &passphrase("correct horse battery"))),
                    "byte {i} flipped by {flip:#x} was accepted"
                );
            }
        }
        let mut truncated = good.clone();
        *field(&mut truncated) = BASE64.encode(&bytes[..bytes.len() - 1]);
        assert!(is_unreadable(open(
            truncated,
            &passphrase("correct horse battery")
        )));
    }

    #[test]
    fn every_byte_of_salt_nonce_and_ciphertext_is_checked() {
        every_byte_of(|e| &mut e.salt);
        every_byte_of(|e| &mut e.nonce);
        every_byte_of(|e| &mut e.ciphertext);
    }

    #[test]
    fn every_character_of_the_checksum_is_checked() {
        let good = sealed();
        for i in 0..good.checksum.len() {
            let mut bad = good.clone();
            let mut chars: Vec<char> = bad.checksum.chars().collect();
            chars[i] = if chars[i] == '0' { '1' } else { '0' };
            bad.checksum = chars.into_iter().collect();
            assert!(is_unreadable(open(
                bad,
                &passphrase("correct horse battery")
            )));
        }
    }

    #[test]
    fn changed_header_fields_and_hostile_parameters_are_refused() {
        let good = sealed();
        let mut later = good.clone();
        later.encrypted_at = Timestamp::parse("2001-01-01T00:00:00Z").unwrap();
        let mut cheaper = good.clone();
        cheaper.kdf_params.iterations = 2;
        let mut huge = good.clone();
        huge.kdf_params.memory_kib = 4 * 1024 * 1024;
        let mut other = good.clone();
        other.cipher = "aes-128-gcm".into();
        for bad in [later, cheaper, huge, other] {
            assert!(is_unreadable(open(
                bad,
                &passphrase("correct horse battery")
            )));
        }
    }

    #[test]
    fn every_truncation_of_the_text_is_refused() {
        let text = serde_json::to_vec(&sealed()).unwrap();
        for len in 0..text.len() {
            let refused = match parse(&text[..len]) {
                Err(_) => true,
                Ok(envelope) => is_unreadable(open(envelope, &passphrase("correct horse battery"))),
            };
            assert!(refused, "a bundle cut at {len} bytes was accepted");
        }
    }
}

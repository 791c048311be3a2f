//! The server's own key for second-factor secrets, which must be read back
//! (unlike passwords and tokens, which are only ever compared): AES-256-GCM
//! with a key kept in a file of the data directory, beside but outside the
//! database, so a copy of the database alone does not reveal them.

use std::io::Write;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};

use crate::error::{ApiError, Result};

pub const KEY_FILE: &str = "mfa-secret.key";
const NONCE_LEN: usize = 12;

#[derive(Clone)]
pub struct MfaKey([u8; 32]);

impl std::fmt::Debug for MfaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MfaKey(..)")
    }
}

impl MfaKey {
    /// Reads the key of `data_dir`, creating it (owner-only) on first use.
    /// The key kept beside `db`'s file. `None` when it could not be read or
    /// made (logged here; enrolment and second-factor sign-in then fail with
    /// 500 through `key`).
    pub fn for_database(db: &crate::db::Db) -> Option<MfaKey> {
        db.path()
            .parent()
            .map(MfaKey::load_or_create)
            .and_then(|loaded| {
                loaded
                    .inspect_err(|e| tracing::error!("cannot read or create the MFA key: {e}"))
                    .ok()
            })
    }

    /// The server's key, for a handler about to encrypt or decrypt.
    pub fn of(state: &crate::state::AppState) -> Result<MfaKey> {
        state
            .try_part::<MfaKey>()
            .map(|key| MfaKey::clone(key))
            .ok_or_else(|| crate::error::ApiError::internal("the MFA key is unavailable"))
    }

    pub fn load_or_create(data_dir: &Path) -> std::io::Result<MfaKey> {
        let path = data_dir.join(KEY_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{} is not a 32-byte key", path.display()),
                    )
                })?;
                Ok(MfaKey(key))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0u8; 32];
                getrandom::fill(&mut key).expect("operating system random source");
                let mut file = crate::db::private_files::create_new_file(&path)?;
                file.write_all(&key)?;
                file.sync_all()?;
                Ok(MfaKey(key))
            }
            Err(e) => Err(e),
        }
    }

    /// Nonce followed by ciphertext and tag.
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
        let cipher = Aes256Gcm::new_from_slice(&self.0).map_err(ApiError::internal)?;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("operating system random source");
        let sealed = cipher
            .encrypt(&Nonce::from(nonce), plaintext)
            .map_err(|_| ApiError::internal("cannot encrypt a second-factor secret"))?;
        let mut out = nonce.to_vec();
        out.extend(sealed);
        Ok(out)
    }

    pub fn decrypt(&self, stored: &[u8]) -> Result<Vec<u8>> {
        if stored.len() < NONCE_LEN {
            return Err(ApiError::internal(
                "a stored second-factor secret is cut short",
            ));
        }
        let (nonce, sealed) = stored.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(ApiError::internal)?;
        let cipher = Aes256Gcm::new_from_slice(&self.0).map_err(ApiError::internal)?;
        cipher.decrypt(&Nonce::from(nonce), sealed).map_err(|_| {
            ApiError::internal("a second-factor secret does not decrypt with this server's key")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_the_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let key = MfaKey::load_or_create(dir.path()).unwrap();
        let sealed = key.encrypt(b"secret").unwrap();
        assert_ne!(&sealed[NONCE_LEN..], b"secret");
        let again = MfaKey::load_or_create(dir.path()).unwrap();
        assert_eq!(again.decrypt(&sealed).unwrap(), b"secret");
        let other = MfaKey::load_or_create(tempfile::tempdir().unwrap().path()).unwrap();
        assert!(other.decrypt(&sealed).is_err());
    }
}

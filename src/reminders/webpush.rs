//! Web Push messages: the payload encrypted as RFC 8291 (`aes128gcm`,
//! RFC 8188 with one record) for the browser's keys, and the VAPID
//! (RFC 8292) authorization signed with the server's P-256 key.

use aes_gcm::Aes128Gcm;
use aes_gcm::aead::{Aead, KeyInit};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

/// Record size announced in the header; one record carries the whole
/// (short) payload.
const RECORD_SIZE: u32 = 4096;
/// A longer payload would not fit in one record (and push services cap
/// bodies at 4 KiB).
pub const MAX_PAYLOAD: usize = 3000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PushKeyError {
    #[error("p256dh must be a base64url P-256 public key (65 bytes uncompressed)")]
    PublicKey,
    #[error("auth must be a base64url secret of 16 bytes")]
    Auth,
}

fn decode(text: &str) -> Option<Vec<u8>> {
    let trimmed = text.trim_end_matches('=');
    URL_SAFE_NO_PAD.decode(trimmed).ok()
}

/// The browser's keys, checked.
pub struct ClientKeys {
    public: PublicKey,
    public_bytes: Vec<u8>,
    auth: [u8; 16],
}

impl ClientKeys {
    pub fn parse(p256dh: &str, auth: &str) -> Result<ClientKeys, PushKeyError> {
        let public_bytes = decode(p256dh)
            .filter(|b| b.len() == 65 && b[0] == 4)
            .ok_or(PushKeyError::PublicKey)?;
        let public =
            PublicKey::from_sec1_bytes(&public_bytes).map_err(|_| PushKeyError::PublicKey)?;
        let auth: [u8; 16] = decode(auth)
            .and_then(|b| b.try_into().ok())
            .ok_or(PushKeyError::Auth)?;
        Ok(ClientKeys {
            public,
            public_bytes,
            auth,
        })
    }
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("operating system random source");
    bytes
}

/// A fresh P-256 key (a random scalar; the rare out-of-range one is drawn again).
pub fn random_secret_key() -> SecretKey {
    loop {
        if let Ok(key) = SecretKey::from_slice(&random::<32>()) {
            return key;
        }
    }
}

fn uncompressed(key: &PublicKey) -> Vec<u8> {
    key.to_sec1_bytes().into_vec()
}

/// RFC 8291 section 3.4: the body of a push message carrying `plaintext`.
pub fn encrypt(keys: &ClientKeys, plaintext: &[u8]) -> Vec<u8> {
    encrypt_with(keys, plaintext, &random_secret_key(), random::<16>())
}

fn encrypt_with(
    keys: &ClientKeys,
    plaintext: &[u8],
    ephemeral: &SecretKey,
    salt: [u8; 16],
) -> Vec<u8> {
    let as_public = uncompressed(&ephemeral.public_key());
    let shared = ephemeral.diffie_hellman(&keys.public);
    // IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" || 0 || ua_public || as_public, 32)
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(&keys.public_bytes);
    key_info.extend_from_slice(&as_public);
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(&keys.auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .expect("32 bytes is a valid HKDF length");
    let prk = Hkdf::<Sha256>::new(Some(&salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .expect("16 bytes is a valid HKDF length");
    prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
        .expect("12 bytes is a valid HKDF length");
    // One record, the last: the delimiter 0x02 and no padding.
    let mut record = plaintext.to_vec();
    record.push(2);
    let cipher = Aes128Gcm::new(&cek.into());
    let sealed = cipher
        .encrypt(&nonce.into(), record.as_slice())
        .expect("AES-GCM encrypts any record this short");
    let mut body = Vec::with_capacity(16 + 4 + 1 + 65 + sealed.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&sealed);
    body
}

/// The server's VAPID key.
pub struct Vapid {
    signing: SigningKey,
    /// base64url of the uncompressed public key, as browsers take it
    /// (`applicationServerKey`) and as the `k` parameter sends it.
    pub public_key: String,
}

impl Vapid {
    /// From the 32 stored bytes of the private scalar.
    pub fn from_secret(bytes: &[u8]) -> Option<Vapid> {
        let secret = SecretKey::from_slice(bytes).ok()?;
        let public_key = URL_SAFE_NO_PAD.encode(uncompressed(&secret.public_key()));
        Some(Vapid {
            signing: SigningKey::from(&secret),
            public_key,
        })
    }

    /// The `Authorization` header for a push to `endpoint`: a JWT (ES256)
    /// naming the push service's origin, valid for 12 hours from `now`.
    pub fn authorization(
        &self,
        endpoint: &str,
        subject: &str,
        now: jiff::Timestamp,
    ) -> Option<String> {
        let audience = origin(endpoint)?;
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": audience,
            "exp": now.as_second() + 12 * 3600,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature: Signature = self.signing.sign(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(signature.to_bytes());
        Some(format!(
            "vapid t={signing_input}.{signature}, k={}",
            self.public_key
        ))
    }
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let origin = parsed.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8291 appendix A: the example message, keys and salt.
    #[test]
    fn rfc8291_example_encrypts_to_the_published_body() {
        let b = |s: &str| URL_SAFE_NO_PAD.decode(s).unwrap();
        let keys = ClientKeys::parse(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            "BTBZMqHH6r4Tts7J_aSIgg",
        )
        .unwrap();
        let ephemeral =
            SecretKey::from_slice(&b("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).unwrap();
        let salt: [u8; 16] = b("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = encrypt_with(
            &keys,
            b"When I grow up, I want to be a watermelon",
            &ephemeral,
            salt,
        );
        assert_eq!(
            URL_SAFE_NO_PAD.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(
            ClientKeys::parse("abc", "BTBZMqHH6r4Tts7J_aSIgg").err(),
            Some(PushKeyError::PublicKey)
        );
        assert_eq!(
            ClientKeys::parse(
                "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
                "short"
            )
            .err(),
            Some(PushKeyError::Auth)
        );
    }
}

//! Phone push: Firebase Cloud Messaging (HTTP v1, OAuth 2.0 service-account
//! JWT grant) for android tokens and APNs (token-based, ES256 provider
//! token) for ios tokens, each only when its credentials are configured.
//! Keys are read once at start and never logged.

use std::fmt;
use std::path::Path;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::{SignedDuration, Timestamp};
use p256::ecdsa::signature::Signer;
use serde::Deserialize;
use sha2::Sha256;

use super::outcome::Outcome;

const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// A provider or access token is renewed this long before it expires.
const RENEW_BEFORE: SignedDuration = SignedDuration::from_mins(5);
/// APNs accepts a provider token for an hour; a fresh one every 40 minutes.
const APNS_TOKEN_LIFE: SignedDuration = SignedDuration::from_mins(40);

/// A Firebase service account (the JSON file the Firebase console gives).
pub struct FcmCredentials {
    project_id: String,
    client_email: String,
    token_uri: String,
    key: rsa::pkcs1v15::SigningKey<Sha256>,
    api_url: String,
}

impl fmt::Debug for FcmCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FcmCredentials")
            .field("project_id", &self.project_id)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct ServiceAccount {
    project_id: String,
    client_email: String,
    private_key: String,
    #[serde(default)]
    token_uri: Option<String>,
}

/// Reads a service account file; `api_url` is FCM's base URL.
pub fn load_fcm(path: &Path, api_url: &str) -> Result<FcmCredentials, String> {
    use rsa::pkcs8::DecodePrivateKey;
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the FCM service account {}: {e}",
            path.display()
        )
    })?;
    let account: ServiceAccount = serde_json::from_str(&text).map_err(|_| {
        format!(
            "{} is not a Firebase service account JSON file (project_id, client_email, private_key)",
            path.display()
        )
    })?;
    let key = rsa::PrivateKey::from_pkcs8_pem(&account.private_key).map_err(|_| {
        format!(
            "the private_key in {} is not an RSA key in PKCS#8 PEM",
            path.display()
        )
    })?;
    Ok(FcmCredentials {
        project_id: account.project_id,
        client_email: account.client_email,
        token_uri: account
            .token_uri
            .unwrap_or_else(|| "https://oauth2.googleapis.com/token".into()),
        key: rsa::pkcs1v15::SigningKey::new(key),
        api_url: api_url.trim_end_matches('/').to_string(),
    })
}

/// An APNs signing key (.p8) with its key id, team id and the app's topic.
pub struct ApnsCredentials {
    key_id: String,
    team_id: String,
    topic: String,
    url: String,
    key: p256::ecdsa::SigningKey,
}

impl fmt::Debug for ApnsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApnsCredentials")
            .field("key_id", &self.key_id)
            .field("team_id", &self.team_id)
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

pub fn load_apns(
    path: &Path,
    key_id: &str,
    team_id: &str,
    topic: &str,
    url: &str,
) -> Result<ApnsCredentials, String> {
    use p256::pkcs8::DecodePrivateKey;
    let pem = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the APNs key {}: {e}", path.display()))?;
    let key = p256::SecretKey::from_pkcs8_pem(&pem).map_err(|_| {
        format!(
            "{} is not an APNs .p8 key (P-256, PKCS#8 PEM)",
            path.display()
        )
    })?;
    Ok(ApnsCredentials {
        key_id: key_id.to_string(),
        team_id: team_id.to_string(),
        topic: topic.to_string(),
        url: url.trim_end_matches('/').to_string(),
        key: p256::ecdsa::SigningKey::from(&key),
    })
}

fn jwt(
    header: serde_json::Value,
    claims: serde_json::Value,
    sign: impl Fn(&[u8]) -> Vec<u8>,
) -> String {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = URL_SAFE_NO_PAD.encode(sign(input.as_bytes()));
    format!("{input}.{signature}")
}

/// A token and when it stops being used.
type Cached = Mutex<Option<(String, Timestamp)>>;

fn cached(cache: &Cached, now: Timestamp) -> Option<String> {
    let guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()
        .filter(|(_, until)| *until > now)
        .map(|(token, _)| token.clone())
}

fn remember(cache: &Cached, token: &str, until: Timestamp) {
    *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((token.to_string(), until));
}

fn forget(cache: &Cached) {
    *cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// An APNs device token is 32 bytes written as hexadecimal.
const APNS_TOKEN_LEN: usize = 64;
/// FCM registration tokens are about 160 characters today; Google gives no
/// fixed length, so a margin either side.
const FCM_TOKEN_LEN: std::ops::RangeInclusive<usize> = 100..=4096;

/// Why `token` is not an APNs device token, or `None`. It becomes part of
/// a request path, so only its documented shape passes.
pub fn apns_token_problem(token: &str) -> Option<&'static str> {
    (token.len() != APNS_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some("must be an APNs device token: 64 hexadecimal characters")
}

/// Why `token` is not an FCM registration token, or `None`: it is held to
/// its alphabet and a sane length.
pub fn fcm_token_problem(token: &str) -> Option<&'static str> {
    (!FCM_TOKEN_LEN.contains(&token.len())
        || !token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':')))
    .then_some("must be an FCM registration token: 100 to 4096 letters, digits, '-', '_' or ':'")
}

/// A notification for a phone.
pub struct Message<'a> {
    pub token: &'a str,
    pub kind: &'a str,
    pub title: &'a str,
    pub body: &'a str,
}

/// Sends to FCM and APNs, keeping their access and provider tokens.
#[derive(Default)]
pub struct NativeSender {
    fcm_access: Cached,
    apns_provider: Cached,
}

impl NativeSender {
    async fn fcm_access_token(
        &self,
        http: &reqwest::Client,
        fcm: &FcmCredentials,
    ) -> Result<String, Outcome> {
        let now = Timestamp::now();
        if let Some(token) = cached(&self.fcm_access, now) {
            return Ok(token);
        }
        let assertion = jwt(
            serde_json::json!({"alg": "RS256", "typ": "JWT"}),
            serde_json::json!({
                "iss": fcm.client_email,
                "scope": FCM_SCOPE,
                "aud": fcm.token_uri,
                "iat": now.as_second(),
                "exp": now.as_second() + 3600,
            }),
            |input| {
                use rsa::signature::SignatureEncoding;
                fcm.key.sign(input).to_vec()
            },
        );
        let form = format!(
            "grant_type={}&assertion={assertion}",
            "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
        );
        let response = http
            .post(&fcm.token_uri)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|_| Outcome::Retry("cannot reach the FCM token endpoint".into()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(if status.is_server_error() || status.as_u16() == 429 {
                Outcome::Retry(format!(
                    "the FCM token endpoint answered {}",
                    status.as_u16()
                ))
            } else {
                Outcome::Failed(format!(
                    "the FCM token endpoint refused the service account ({})",
                    status.as_u16()
                ))
            });
        }
        #[derive(Deserialize)]
        struct Grant {
            access_token: String,
            #[serde(default)]
            expires_in: Option<i64>,
        }
        let grant: Grant = response
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| Outcome::Retry("the FCM token endpoint answered no token".into()))?;
        let life = SignedDuration::from_secs(grant.expires_in.unwrap_or(3600).clamp(60, 3600));
        remember(
            &self.fcm_access,
            &grant.access_token,
            now + life - RENEW_BEFORE.min(life / 2),
        );
        Ok(grant.access_token)
    }

    /// FCM HTTP v1 `messages:send`. 404 (UNREGISTERED) means the token is gone.
    pub async fn send_fcm(
        &self,
        http: &reqwest::Client,
        fcm: &FcmCredentials,
        message: &Message<'_>,
    ) -> Outcome {
        // A token stored before tokens were checked may not be one.
        if fcm_token_problem(message.token).is_some() {
            return Outcome::Failed("the phone token is not an FCM registration token".into());
        }
        let access = match self.fcm_access_token(http, fcm).await {
            Ok(token) => token,
            Err(outcome) => return outcome,
        };
        let url = format!(
            "{}/v1/projects/{}/messages:send",
            fcm.api_url, fcm.project_id
        );
        let body = serde_json::json!({"message": {
            "token": message.token,
            "notification": {"title": message.title, "body": message.body},
            "data": {"kind": message.kind},
            "android": {"priority": "high"},
        }});
        let response = http
            .post(&url)
            .bearer_auth(access)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await;
        match response {
            Ok(r) if r.status().is_success() => Outcome::Delivered,
            Ok(r) if r.status().as_u16() == 404 => Outcome::Gone,
            Ok(r) if r.status().as_u16() == 401 => {
                forget(&self.fcm_access);
                Outcome::Retry("FCM refused the access token".into())
            }
            Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
                Outcome::Retry(format!("FCM answered {}", r.status().as_u16()))
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let text = r.text().await.unwrap_or_default();
                if text.contains("UNREGISTERED") {
                    Outcome::Gone
                } else {
                    Outcome::Failed(format!("FCM refused the message with {status}"))
                }
            }
            Err(_) => Outcome::Retry("cannot reach FCM".into()),
        }
    }

    fn apns_provider_token(&self, apns: &ApnsCredentials) -> String {
        let now = Timestamp::now();
        if let Some(token) = cached(&self.apns_provider, now) {
            return token;
        }
        let token = jwt(
            serde_json::json!({"alg": "ES256", "kid": apns.key_id}),
            serde_json::json!({"iss": apns.team_id, "iat": now.as_second()}),
            |input| {
                let signature: p256::ecdsa::Signature = apns.key.sign(input);
                signature.to_bytes().to_vec()
            },
        );
        remember(&self.apns_provider, &token, now + APNS_TOKEN_LIFE);
        token
    }

    /// APNs `POST /3/device/{token}`. 410, or 400 BadDeviceToken, means the
    /// token is gone.
    pub async fn send_apns(
        &self,
        http: &reqwest::Client,
        apns: &ApnsCredentials,
        message: &Message<'_>,
    ) -> Outcome {
        // The token goes into the path: one stored before tokens were
        // checked must not reach the URL unless it has the shape.
        if apns_token_problem(message.token).is_some() {
            return Outcome::Failed("the phone token is not an APNs device token".into());
        }
        let provider = self.apns_provider_token(apns);
        let url = format!("{}/3/device/{}", apns.url, message.token);
        let body = serde_json::json!({
            "aps": {"alert": {"title": message.title, "body": message.body}, "sound": "default"},
            "kind": message.kind,
        });
        let response = http
            .post(&url)
            .header("authorization", format!("bearer {provider}"))
            .header("apns-topic", apns.topic.as_str())
            .header("apns-push-type", "alert")
            .header("apns-priority", "10")
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await;
        match response {
            Ok(r) if r.status().is_success() => Outcome::Delivered,
            Ok(r) if r.status().as_u16() == 410 => Outcome::Gone,
            Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
                Outcome::Retry(format!("APNs answered {}", r.status().as_u16()))
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let reason = r
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .and_then(|v| v["reason"].as_str().map(str::to_string))
                    .unwrap_or_default();
                match reason.as_str() {
                    "BadDeviceToken" | "Unregistered" | "DeviceTokenNotForTopic" => Outcome::Gone,
                    "ExpiredProviderToken" => {
                        forget(&self.apns_provider);
                        Outcome::Retry("APNs asked for a fresh provider token".into())
                    }
                    _ => Outcome::Failed(format!("APNs refused the message with {status}")),
                }
            }
            Err(_) => Outcome::Retry("cannot reach APNs".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_tokens_are_held_to_their_documented_shape() {
        let apns = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
        assert_eq!(apns_token_problem(apns), None);
        assert_eq!(apns_token_problem(&apns.to_ascii_uppercase()), None);
        for bad in [
            &apns[1..],
            &format!("{apns}0"),
            &apns.replace('a', "g"),
            "../../v1/x",
        ] {
            assert!(apns_token_problem(bad).is_some(), "{bad}");
        }
        let fcm = format!("cXp1Vw3hTkS-ab_12:APA91b{}", "Hx9-_z".repeat(22));
        assert_eq!(fcm_token_problem(&fcm), None);
        for bad in [
            "fcm-registration-1".to_string(),
            format!("{fcm}/../x"),
            format!("{fcm} x"),
            format!("{fcm}%2F"),
            "a".repeat(4097),
        ] {
            assert!(fcm_token_problem(&bad).is_some(), "{bad}");
        }
    }
}

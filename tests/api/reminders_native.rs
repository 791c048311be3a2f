//! Phone reminders through FCM HTTP v1 and APNs, each against a stub the
//! test starts that checks the protocol's authentication and message shape.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pillbox::config::{ReminderSettings, Settings};
use pillbox::reminders::Clock;
use pillbox::reminders::native::{load_apns, load_fcm};
use pillbox::reminders::task::Reminders;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::new_medication;
use crate::support::reminders::{APNS_TOKEN, FCM_TOKEN, ManualClock};

/// A throwaway RSA key of a made-up service account (test only).
const FCM_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDTVZc70tGpL2jB\nLZNyD/EpLuwLDGdB9EVo4jYXtaJBBvlm/8vyK3VXWcCSAKlf8b91tIseH922De0P\nh4VIQJDJZjA67r9NXQSQL5Bsg8roeasMD+XLAbKsvyI4G4qAmoBcCbfiXPmtK9CM\n9uQ/fiKxY7h8k0xAs4wzUbuV9tcu6NsJSXyVKpD3DkoRO9Q5zfHo+A2jgboEnCuG\ndw+5xsfHiwMW09f9aztsCamVzbhJJ/qPTyU6bemdgicI28CfFyuuKsgG/52Uq57v\ncUjC+rW7ShlTInVH5NrZyXzSCA9ifU8kjsAyx568RhHMHWpHT8NxEQwq8YozLNBK\nLOd8ntXbAgMBAAECggEAKi2y+WWiIrorliKagvFbmHSc97eKBEfUcpJzaVf/Ait6\nK2xyL+ssiDqJjJpFM7j0FXHrMh/6CBPPdIH/v+PjAc87YQe1dqNR/dUAZigHn05p\nLQcfPd0g5AlhswEMK46qf7QQ10TnMADGptu/wkxScEUO1Q4w8djj6notjkituday\nwcGNxHPfijGfS3+3Aq0Pxex9LiVGjOcdDUEyTSRBDtatUYNntCUxd3Wl9Po5T/GE\nrk0KcxZ48FXKh5TEkSPrZ7gf0XgFRnZ5PtMfAKSkr9nEd8pUEod3UdKrqV3n90ix\nVEDy/dKp4nyMv3pppHbFIpS2of6XrEY+XqZc70ZiwQKBgQDuDBuhN7HivriKaSf5\nM91haBOkuJvyjf70uLJYOitczbyVyPbm98PINF1oFpcJeIMjUePEKOloyu660ZLs\nSQVeWOugJ6h5Q3D+lj7lYVTmP7tgOERCzRe0/TAfGqwbJRlO4m3XaasoHz6I9onX\nBWf4kfGjHK+vphfm9QNsATJxzQKBgQDjRb7axyCbeAnH2tPEbft6DgoVaVyvJs5/\nNmUO5lk4z7FhFmve3kIJSCFsqQP8bwrWTdN8n4NUEMLPEO/4Y66Z57tUJuX2eHS4\nq6BYqSGOkpqx3zyJSKDNDvotua1Y0N8OkP9qxE2iMm67fFheM1X9aziYXdoDDELk\niiX3sTheRwKBgQCxOaJ4bJarUYLiyVdRWSPAmVPGlwrDkqP2Xmuo8+XEugdlHLF1\nU5EXRKUmEWtxSZ+YdCc2q57avfrua4kPEW5Fx73lBqGPZn6BjCpXbBdhNKG0CTAI\n69hyju18usbXjs9Aw6MzdSBQRrKwFZyZ0RSPI1jbL0g9ZVL2SAO8LUf5IQKBgQDh\nCSJdhmYnCsjEd0zQZwZmaJhbcyQu2gIFvFp8UmFt+1jrhUPyPaitgBp4eTJVNa5J\nXG5YK6niB2admWvDSxCLnATE4m85iTQp1ubCY1Wy0j8SeLR8SsnNwVK/C+c01jzH\nM5N0qEMmo0E5q3nkbHhsoUo8tFE2S2HA4XmOtI/X6QKBgAmvPWgkdzFvX80GtC1d\nZ0MF4BxXPPe8DhwKx4jJx9GXHtJalx+h+eSBqQAKh/eGkEnUZqkv3rLTWzyvgOSa\n2VBCVF5C19qy7f5GA3M4VjZTcIqrglelzPFOyPi3+wq9JaVO8KC/41G5ZG7zyvG0\ngOGsJ0p3DRxlmqxyOheJLllO\n-----END PRIVATE KEY-----\n";
const FCM_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA01WXO9LRqS9owS2Tcg/x\nKS7sCwxnQfRFaOI2F7WiQQb5Zv/L8it1V1nAkgCpX/G/dbSLHh/dtg3tD4eFSECQ\nyWYwOu6/TV0EkC+QbIPK6HmrDA/lywGyrL8iOBuKgJqAXAm34lz5rSvQjPbkP34i\nsWO4fJNMQLOMM1G7lfbXLujbCUl8lSqQ9w5KETvUOc3x6PgNo4G6BJwrhncPucbH\nx4sDFtPX/Ws7bAmplc24SSf6j08lOm3pnYInCNvAnxcrrirIBv+dlKue73FIwvq1\nu0oZUyJ1R+Ta2cl80ggPYn1PJI7AMseevEYRzB1qR0/DcREMKvGKMyzQSiznfJ7V\n2wIDAQAB\n-----END PUBLIC KEY-----\n";
/// A throwaway APNs key (test only).
const APNS_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzF4QnGkImdFC5pUV\nM//94/6DIDEZWjBn7f2sWZDY1J6hRANCAARdODUXSEHXdytrSgFht62iWrp0LCkp\nDKOfSOca/WT4ANHdAr55SrKbmemaGBdFCq+FYOR3lS43dA2b1t04Xarl\n-----END PRIVATE KEY-----\n";

#[derive(Default)]
struct Stub {
    /// (path, headers, JSON body) of each message accepted or refused.
    messages: Mutex<Vec<(String, HeaderMap, Value)>>,
    grants: Mutex<usize>,
    /// Answer for messages: true → the token is gone.
    gone: Mutex<bool>,
}

fn parts(jwt: &str) -> (Value, Value, String, Vec<u8>) {
    let (input, signature) = jwt.rsplit_once('.').unwrap();
    let (head, claims) = input.split_once('.').unwrap();
    let decode = |s: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap();
    (
        decode(head),
        decode(claims),
        input.to_string(),
        URL_SAFE_NO_PAD.decode(signature).unwrap(),
    )
}

/// OAuth 2.0 JWT bearer grant (RFC 7523): the assertion is signed (RS256)
/// by the service account's key and names the token endpoint.
async fn token(State((stub, aud)): State<(Arc<Stub>, String)>, body: String) -> impl IntoResponse {
    use rsa::pkcs8::DecodePublicKey;
    use rsa::signature::Verifier;
    let form: Vec<(String, String)> = body
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.replace("%3A", ":"))
        })
        .collect();
    let get = |name: &str| form.iter().find(|(k, _)| k == name).unwrap().1.clone();
    assert_eq!(
        get("grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    let (head, claims, input, signature) = parts(&get("assertion"));
    assert_eq!(head["alg"], "RS256");
    assert_eq!(
        claims["iss"],
        "pillbox@test-project.iam.gserviceaccount.com"
    );
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/firebase.messaging"
    );
    assert_eq!(claims["aud"], aud);
    let key = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(
        rsa::PublicKey::from_public_key_pem(FCM_PUBLIC).unwrap(),
    );
    let signature = rsa::pkcs1v15::Signature::try_from(signature.as_slice()).unwrap();
    key.verify(input.as_bytes(), &signature)
        .expect("the assertion is signed with the service account key");
    *stub.grants.lock().unwrap() += 1;
    axum::Json(
        json!({"access_token": "ya29.test-access", "expires_in": 3599, "token_type": "Bearer"}),
    )
}

async fn fcm_send(
    State((stub, _)): State<(Arc<Stub>, String)>,
    Path(project): Path<String>,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    assert_eq!(project, "test-project");
    assert_eq!(headers["authorization"], "Bearer ya29.test-access");
    let body: Value = serde_json::from_str(&body).unwrap();
    stub.messages.lock().unwrap().push((
        format!("/v1/projects/{project}/messages:send"),
        headers,
        body.clone(),
    ));
    if *stub.gone.lock().unwrap() {
        let error = json!({"error": {"code": 404, "status": "NOT_FOUND",
            "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}});
        return (StatusCode::NOT_FOUND, axum::Json(error));
    }
    (
        StatusCode::OK,
        axum::Json(json!({"name": "projects/test-project/messages/1"})),
    )
}

/// APNs: the provider token is an ES256 JWT of the team signed with the
/// .p8 key named by `kid`.
async fn apns_send(
    State((stub, _)): State<(Arc<Stub>, String)>,
    Path(device): Path<String>,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::DecodePrivateKey;
    let bearer = headers["authorization"]
        .to_str()
        .unwrap()
        .strip_prefix("bearer ")
        .unwrap();
    let (head, claims, input, signature) = parts(bearer);
    assert_eq!(head["alg"], "ES256");
    assert_eq!(head["kid"], "ABC123DEFG");
    assert_eq!(claims["iss"], "TEAM123456");
    let public = p256::SecretKey::from_pkcs8_pem(APNS_KEY)
        .unwrap()
        .public_key();
    p256::ecdsa::VerifyingKey::from(&public)
        .verify(
            input.as_bytes(),
            &p256::ecdsa::Signature::from_slice(&signature).unwrap(),
        )
        .expect("the provider token is signed with the APNs key");
    assert_eq!(headers["apns-topic"], "org.example.pillbox");
    assert_eq!(headers["apns-push-type"], "alert");
    let body: Value = serde_json::from_str(&body).unwrap();
    stub.messages
        .lock()
        .unwrap()
        .push((format!("/3/device/{device}"), headers, body));
    if *stub.gone.lock().unwrap() {
        return (
            StatusCode::GONE,
            axum::Json(json!({"reason": "Unregistered", "timestamp": 1})),
        );
    }
    (StatusCode::OK, axum::Json(json!({})))
}

async fn start_stub() -> (Arc<Stub>, String) {
    let stub = Arc::new(Stub::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .route(
            "/v1/projects/{project}/messages:send",
            axum::routing::post(fcm_send),
        )
        .route("/3/device/{device}", axum::routing::post(apns_send))
        .with_state((stub.clone(), format!("{base}/token")));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (stub, base)
}

/// FCM and APNs, both pointed at the stub at `base`.
fn phone_settings(dir: &std::path::Path, base: &str) -> ReminderSettings {
    let account = dir.join("service-account.json");
    std::fs::write(
        &account,
        json!({"type": "service_account", "project_id": "test-project",
            "client_email": "pillbox@test-project.iam.gserviceaccount.com",
            "private_key": FCM_KEY, "token_uri": format!("{base}/token")})
        .to_string(),
    )
    .unwrap();
    let p8 = dir.join("AuthKey_ABC123DEFG.p8");
    std::fs::write(&p8, APNS_KEY).unwrap();
    ReminderSettings {
        fcm: Some(Arc::new(load_fcm(&account, base).unwrap())),
        apns: Some(Arc::new(
            load_apns(&p8, "ABC123DEFG", "TEAM123456", "org.example.pillbox", base).unwrap(),
        )),
        ..ReminderSettings::default()
    }
}

#[tokio::test]
async fn phone_reminders_go_through_fcm_and_apns_and_gone_tokens_are_removed() {
    let (stub, base) = start_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let reminders = phone_settings(dir.path(), &base);
    let app = TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        reminders: reminders.clone(),
        ..Settings::default()
    })
    .await;
    let caps = app.get("/api/v1/capabilities", "").await;
    assert_eq!(caps.data()["features"]["native_push"], true);
    assert_eq!(
        caps.data()["notifications"]["native_push_unavailable_reason"],
        Value::Null
    );

    let tokens = app.hh("/native_device_tokens");
    let android = app
        .post(
            &tokens,
            &app.owner,
            json!({"native_device_token": {"token": FCM_TOKEN, "platform": "android"}}),
        )
        .await;
    android.assert_status(201);
    assert_eq!(android.data()["delivery_enabled"], true);
    app.post(
        &tokens,
        &app.owner,
        json!({"native_device_token": {"token": APNS_TOKEN, "platform": "ios"}}),
    )
    .await
    .assert_status(201);
    let me = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    let person = me.data()["person_id"].as_i64().unwrap();
    let med = new_medication(&app, "Metformin").await;
    app.post(
        &app.hh("/schedules"),
        &app.owner,
        json!({"schedule": {"person_id": person, "medication_id": med.id,
            "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
            "start_date": "2027-04-01"}}),
    )
    .await
    .assert_status(201);

    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = Reminders::new(app.db.clone(), clock.clone() as Arc<dyn Clock>, reminders)
        .await
        .unwrap();
    engine.scan().await.unwrap();
    clock.set("2027-04-02T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 2);
    engine.deliver().await.unwrap();
    {
        let messages = stub.messages.lock().unwrap();
        assert_eq!(messages.len(), 2);
        let fcm = messages.iter().find(|m| m.0.starts_with("/v1/")).unwrap();
        assert_eq!(fcm.2["message"]["token"], FCM_TOKEN);
        assert_eq!(
            fcm.2["message"]["notification"]["body"],
            "A dose for Olive Owner is due"
        );
        let apns = messages.iter().find(|m| m.0.starts_with("/3/")).unwrap();
        assert_eq!(apns.0, format!("/3/device/{APNS_TOKEN}"));
        assert_eq!(apns.2["aps"]["alert"]["title"], "Dose due");
    }
    assert_eq!(*stub.grants.lock().unwrap(), 1);

    // The services no longer know the tokens: they are removed.
    *stub.gone.lock().unwrap() = true;
    clock.set("2027-04-03T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 2);
    engine.deliver().await.unwrap();
    assert_eq!(stub.messages.lock().unwrap().len(), 4);
    assert_eq!(*stub.grants.lock().unwrap(), 1, "the access token is kept");
    let left: i64 = app
        .db
        .read(|c| {
            Ok(
                c.query_row("SELECT count(*) FROM native_device_tokens", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap();
    assert_eq!(left, 0);
    let settings = app.get(&app.hh("/admin/settings"), &app.owner).await;
    let health = settings.data()["delivery_health"].as_array().unwrap();
    for channel in ["fcm", "apns"] {
        let h = health.iter().find(|h| h["channel"] == channel).unwrap();
        assert_eq!(h["enabled"], true);
        assert_eq!(h["delivered_count"], 1);
        assert_eq!(h["failed_count"], 1);
    }
}

/// A token stored before tokens were checked (put here directly) is never
/// made part of a request: APNs puts it in the path, where `../` would
/// reach another of the service's endpoints.
#[tokio::test]
async fn a_stored_token_of_the_wrong_shape_reaches_no_url() {
    let (stub, base) = start_stub().await;
    let dir = tempfile::tempdir().unwrap();
    let reminders = phone_settings(dir.path(), &base);
    let app = TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        reminders: reminders.clone(),
        ..Settings::default()
    })
    .await;
    let (household, membership) = (app.household_id, app.owner_membership_id);
    app.db
        .write(move |tx| {
            for (platform, token) in [
                ("ios", "../../v1/projects/test-project/messages:send"),
                ("android", "short"),
            ] {
                tx.execute(
                    "INSERT INTO native_device_tokens (household_id, membership_id, platform, token, created_at)
                     VALUES (?1, ?2, ?3, ?4, '2027-04-01T00:00:00Z')",
                    rusqlite::params![household, membership, platform, token],
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let me = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    let person = me.data()["person_id"].as_i64().unwrap();
    let med = new_medication(&app, "Metformin").await;
    app.post(
        &app.hh("/schedules"),
        &app.owner,
        json!({"schedule": {"person_id": person, "medication_id": med.id,
            "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
            "start_date": "2027-04-01"}}),
    )
    .await
    .assert_status(201);
    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = Reminders::new(app.db.clone(), clock.clone() as Arc<dyn Clock>, reminders)
        .await
        .unwrap();
    engine.scan().await.unwrap();
    clock.set("2027-04-02T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 2);
    engine.deliver().await.unwrap();
    assert!(stub.messages.lock().unwrap().is_empty());
    let outcomes = crate::reminders::outbox(&app).await;
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|row| row.4 == "failed"), "{outcomes:?}");
}

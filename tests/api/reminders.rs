//! Reminders: the member's channels, the engine driven by a clock the test
//! moves (daylight-saving changes included), and delivery to push services
//! and ntfy servers the tests start.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pillbox::auth::Role;
use pillbox::config::{ReminderSettings, Settings};
use pillbox::reminders::Clock;
use pillbox::reminders::task::Reminders;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{Ids, grant, new_medication};
use crate::support::reminders::{APNS_TOKEN, FCM_TOKEN, ManualClock};

/// Settings whose push may reach the services the tests start: http, on
/// this machine's loopback address.
pub fn allow_http() -> Settings {
    Settings {
        rate_limit_per_minute: 0,
        reminders: local_delivery(),
        ..Settings::default()
    }
}

pub fn local_delivery() -> ReminderSettings {
    ReminderSettings {
        push_allow_http: true,
        push_allow_private_network: true,
        ..ReminderSettings::default()
    }
}

pub async fn engine(app: &TestApp, clock: &Arc<ManualClock>) -> Reminders {
    Reminders::new(
        app.db.clone(),
        clock.clone() as Arc<dyn Clock>,
        local_delivery(),
    )
    .await
    .unwrap()
}

/// A browser's subscription keys: the private key stays with the test.
pub struct BrowserKeys {
    pub secret: p256::SecretKey,
    pub auth: [u8; 16],
}

impl BrowserKeys {
    pub fn new() -> BrowserKeys {
        let mut bytes = [0u8; 32];
        let secret = loop {
            getrandom::fill(&mut bytes).unwrap();
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        let mut auth = [0u8; 16];
        getrandom::fill(&mut auth).unwrap();
        BrowserKeys { secret, auth }
    }

    pub fn public(&self) -> Vec<u8> {
        self.secret.public_key().to_sec1_bytes().into_vec()
    }

    pub fn body(&self, endpoint: &str) -> Value {
        json!({"push_subscription": {
            "endpoint": endpoint,
            "p256dh": URL_SAFE_NO_PAD.encode(self.public()),
            "auth": URL_SAFE_NO_PAD.encode(self.auth),
        }})
    }
}

pub async fn subscribe(app: &TestApp, token: &str, endpoint: &str) -> BrowserKeys {
    let keys = BrowserKeys::new();
    app.post(&app.hh("/push_subscription"), token, keys.body(endpoint))
        .await
        .assert_status(201);
    keys
}

/// (membership id, kind, due_at, body, status) of every outbox row.
pub async fn outbox(app: &TestApp) -> Vec<(i64, String, String, String, String)> {
    app.db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT membership_id, kind, due_at, body, status FROM reminder_outbox ORDER BY due_at, id",
            )?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

async fn due_times(app: &TestApp, kind: &str) -> Vec<String> {
    outbox(app)
        .await
        .into_iter()
        .filter(|r| r.1 == kind && r.4 == "pending")
        .map(|r| r.2)
        .collect()
}

async fn own_person(app: &TestApp, token: &str) -> Ids {
    let me = app.get(&app.hh("/notification_preference"), token).await;
    me.assert_status(200);
    Ids {
        id: me.data()["person_id"].as_i64().unwrap(),
        portable: me.data()["person_portable_id"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

async fn daily(app: &TestApp, person: &Ids, medication: &Ids, time: &str, start: &str) -> Ids {
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {"person_id": person.id, "medication_id": medication.id,
                "schedule_type": "daily", "schedule_config": {"times": [time]},
                "start_date": start}}),
        )
        .await;
    created.assert_status(201);
    Ids {
        id: created.data()["id"].as_i64().unwrap(),
        portable: created.data()["portable_id"].as_str().unwrap().to_string(),
    }
}

// ------------------------------------------------------------ channels

#[tokio::test]
async fn push_subscriptions_are_validated_and_belong_to_the_device() {
    let app = TestApp::new().await;
    let path = app.hh("/push_subscription");
    let keys = BrowserKeys::new();

    // http needs --push-allow-http; the URL is never echoed.
    let plain = app
        .post(
            &path,
            &app.owner,
            keys.body("http://push.example.test/secret-abc"),
        )
        .await;
    plain.assert_error(422, "validation_failed");
    assert!(plain.body["error"]["errors"]["endpoint"].is_array());
    assert!(!plain.body.to_string().contains("secret-abc"));
    let mut bad = keys.body("https://push.example.test/x");
    bad["push_subscription"]["p256dh"] = json!("bm90LWEta2V5");
    bad["push_subscription"]["auth"] = json!("c2hvcnQ");
    let refused = app.post(&path, &app.owner, bad).await;
    refused.assert_error(422, "validation_failed");
    assert!(refused.body["error"]["errors"]["p256dh"].is_array());
    let mut missing = keys.body("https://push.example.test/x");
    missing["push_subscription"]
        .as_object_mut()
        .unwrap()
        .remove("auth");
    app.post(&path, &app.owner, missing)
        .await
        .assert_error(422, "validation_failed");
    let count = |app: &TestApp| {
        let db = app.db.clone();
        async move {
            db.read(|c| {
                Ok(
                    c.query_row("SELECT count(*) FROM push_subscriptions", [], |r| {
                        r.get::<_, i64>(0)
                    })?,
                )
            })
            .await
            .unwrap()
        }
    };
    assert_eq!(count(&app).await, 0);

    // Nothing to test or delete yet.
    app.post(&app.hh("/push_subscription/test"), &app.owner, json!({}))
        .await
        .assert_status(404);
    app.delete(&path, &app.owner, None).await.assert_status(404);

    // The browser's toJSON() form, keys nested.
    let nested = json!({"push_subscription": {
        "endpoint": "https://push.example.test/owner",
        "expirationTime": null,
        "keys": {"p256dh": URL_SAFE_NO_PAD.encode(keys.public()), "auth": URL_SAFE_NO_PAD.encode(keys.auth)},
    }});
    let created = app.post(&path, &app.owner, nested).await;
    created.assert_status(201);
    assert_eq!(
        created.data()["endpoint"],
        "https://push.example.test/owner"
    );
    assert!(created.data().get("auth").is_none() && created.data().get("p256dh").is_none());
    // Again from the same device: replaced, not added.
    subscribe(&app, &app.owner, "https://push.example.test/owner-2").await;
    assert_eq!(count(&app).await, 1);

    // The test operation queues one notification.
    app.post(&app.hh("/push_subscription/test"), &app.owner, json!({}))
        .await
        .assert_status(204);
    let queued = outbox(&app).await;
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].1, "test");
    assert_eq!(queued[0].4, "pending");

    // Another member's device has its own subscription, not the owner's.
    let (_, max) = app
        .add_member("max@example.org", Role::Member, Some("Max Member"))
        .await;
    app.delete(&path, &max, None).await.assert_status(404);
    app.post(&app.hh("/push_subscription/test"), &max, json!({}))
        .await
        .assert_status(404);
    assert_eq!(count(&app).await, 1);
    app.delete(&path, &app.owner, None).await.assert_status(204);
    assert_eq!(count(&app).await, 0);
}

#[tokio::test]
async fn http_push_endpoints_are_accepted_only_when_allowed() {
    let app = TestApp::with_settings(allow_http()).await;
    subscribe(&app, &app.owner, "http://192.168.1.10:8080/push/abc").await;
    let ftp = BrowserKeys::new().body("ftp://push.example.test/x");
    app.post(&app.hh("/push_subscription"), &app.owner, ftp)
        .await
        .assert_error(422, "validation_failed");
}

#[tokio::test]
async fn native_device_tokens_are_kept_per_member_while_native_push_is_off() {
    let app = TestApp::new().await;
    let path = app.hh("/native_device_tokens");
    let created = app
        .post(
            &path,
            &app.owner,
            json!({"native_device_token": {"token": FCM_TOKEN, "platform": "android",
                "device_name": "Olive's phone"}}),
        )
        .await;
    created.assert_status(201);
    assert_eq!(created.data()["platform"], "android");
    assert_eq!(created.data()["delivery_enabled"], false);
    assert!(!created.body.to_string().contains(FCM_TOKEN));
    app.post(
        &path,
        &app.owner,
        json!({"native_device_token": {"token": "x", "platform": "windows"}}),
    )
    .await
    .assert_error(422, "validation_failed");
    app.post(
        &path,
        &app.owner,
        json!({"native_device_token": {"token": "", "platform": "ios"}}),
    )
    .await
    .assert_error(422, "validation_failed");

    let caps = app.get("/api/v1/capabilities", "").await;
    assert_eq!(caps.data()["features"]["native_push"], false);
    assert_eq!(caps.data()["notifications"]["native_push"], false);
    assert!(
        caps.data()["notifications"]["native_push_unavailable_reason"]
            .as_str()
            .unwrap()
            .contains("not configured")
    );

    // Another member cannot remove the owner's token.
    let (_, max) = app
        .add_member("max@example.org", Role::Member, Some("Max Member"))
        .await;
    app.delete(&format!("{path}/{FCM_TOKEN}"), &max, None)
        .await
        .assert_status(404);
    app.delete(&format!("{path}/{FCM_TOKEN}"), &app.owner, None)
        .await
        .assert_status(204);
    app.delete(&format!("{path}/{FCM_TOKEN}"), &app.owner, None)
        .await
        .assert_status(404);
    // By id too.
    let again = app
        .post(
            &path,
            &app.owner,
            json!({"native_device_token": {"token": APNS_TOKEN, "platform": "ios"}}),
        )
        .await;
    again.assert_status(201);
    app.delete(&format!("{path}/{}", again.id()), &app.owner, None)
        .await
        .assert_status(204);
}

#[tokio::test]
async fn the_capability_document_names_the_vapid_key() {
    let app = TestApp::new().await;
    let caps = app.get("/api/v1/capabilities", "").await;
    caps.assert_status(200);
    assert_eq!(caps.data()["features"]["web_push"], true);
    assert_eq!(caps.data()["notifications"]["ntfy"], true);
    let key = caps.data()["notifications"]["web_push_vapid_public_key"]
        .as_str()
        .unwrap();
    let bytes = URL_SAFE_NO_PAD.decode(key).unwrap();
    assert_eq!(bytes.len(), 65);
    assert!(p256::PublicKey::from_sec1_bytes(&bytes).is_ok());
    // Kept: the same key on every read.
    let again = app.get("/api/v1/capabilities", "").await;
    assert_eq!(
        again.data()["notifications"]["web_push_vapid_public_key"],
        key
    );
}

#[tokio::test]
async fn ntfy_channel_is_set_read_and_removed() {
    let app = TestApp::new().await;
    let path = app.hh("/ntfy_channel");
    app.get(&path, &app.owner).await.assert_status(404);
    let plain = app
        .put(
            &path,
            &app.owner,
            json!({"ntfy_channel": {"topic_url": "http://ntfy.example.test/t"}}),
            None,
        )
        .await;
    plain.assert_error(422, "validation_failed");
    assert!(plain.body["error"]["errors"]["topic_url"].is_array());
    app.put(
        &path,
        &app.owner,
        json!({"ntfy_channel": {"topic_url": "https://ntfy.example.test/"}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");
    let set = app
        .put(
            &path,
            &app.owner,
            json!({"ntfy_channel": {"topic_url": "https://ntfy.example.test/olive-pills"}}),
            None,
        )
        .await;
    set.assert_status(200);
    assert_eq!(
        set.data()["topic_url"],
        "https://ntfy.example.test/olive-pills"
    );
    assert_eq!(
        app.get(&path, &app.owner).await.data()["topic_url"],
        "https://ntfy.example.test/olive-pills"
    );
    let (_, max) = app
        .add_member("max@example.org", Role::Member, Some("Max Member"))
        .await;
    app.get(&path, &max).await.assert_status(404);
    app.delete(&path, &app.owner, None).await.assert_status(204);
    app.get(&path, &app.owner).await.assert_status(404);
}

// ------------------------------------------------------------ engine

#[tokio::test]
async fn a_daily_eight_oclock_dose_notifies_at_eight_across_daylight_saving_changes() {
    let app = TestApp::new().await;
    subscribe(&app, &app.owner, "https://push.example.test/owner").await;
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    daily(&app, &olive, &med, "08:00", "2027-03-01").await;
    let clock = ManualClock::at("2027-03-27T06:00:00Z");
    let engine = engine(&app, &clock).await;
    // The first scan only sets the starting point.
    assert_eq!(engine.scan().await.unwrap().queued, 0);

    clock.set("2027-03-27T07:59:59Z");
    let scan = engine.scan().await.unwrap();
    assert_eq!(scan.queued, 0);
    assert_eq!(scan.next_due, Some("2027-03-27T08:00:00Z".parse().unwrap()));
    clock.set("2027-03-27T08:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 1);
    // The clocks go forward on the 28th: 08:00 BST is 07:00 UTC.
    clock.set("2027-03-27T20:00:00Z");
    let scan = engine.scan().await.unwrap();
    assert_eq!(scan.next_due, Some("2027-03-28T07:00:00Z".parse().unwrap()));
    clock.set("2027-03-28T07:00:00Z");
    engine.scan().await.unwrap();

    // October: BST until the 31st, then 08:00 GMT is 08:00 UTC.
    clock.set("2027-10-30T06:59:00Z");
    engine.scan().await.unwrap();
    clock.set("2027-10-30T07:00:00Z");
    let scan = engine.scan().await.unwrap();
    assert_eq!(scan.queued, 1);
    clock.set("2027-10-30T20:00:00Z");
    let scan = engine.scan().await.unwrap();
    assert_eq!(scan.next_due, Some("2027-10-31T08:00:00Z".parse().unwrap()));
    clock.set("2027-10-31T08:00:00Z");
    engine.scan().await.unwrap();

    assert_eq!(
        due_times(&app, "dose_due").await,
        [
            "2027-03-27T08:00:00.000000Z",
            "2027-03-28T07:00:00.000000Z",
            "2027-10-30T07:00:00.000000Z",
            "2027-10-31T08:00:00.000000Z",
        ]
    );
    // A scan again changes nothing: one notification per dose and channel.
    assert_eq!(engine.scan().await.unwrap().queued, 0);
    // What fell due in the gap from March to October was older than the
    // catch-up window when seen: dropped and counted, not sent.
    let rows = outbox(&app).await;
    assert!(rows.iter().any(|r| r.4 == "dropped"));
}

#[tokio::test]
async fn a_missed_dose_is_told_after_the_grace_period_unless_it_was_taken() {
    let app = TestApp::new().await;
    subscribe(&app, &app.owner, "https://push.example.test/owner").await;
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    let schedule = daily(&app, &olive, &med, "08:00", "2026-03-01").await;
    let clock = ManualClock::at("2026-03-10T07:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    clock.set("2026-03-10T08:59:59Z");
    engine.scan().await.unwrap();
    assert_eq!(
        due_times(&app, "dose_due").await,
        ["2026-03-10T08:00:00.000000Z"]
    );
    assert!(due_times(&app, "missed_dose").await.is_empty());
    clock.set("2026-03-10T09:00:00Z");
    let scan = engine.scan().await.unwrap();
    assert_eq!(scan.queued, 1);
    assert_eq!(
        due_times(&app, "missed_dose").await,
        ["2026-03-10T09:00:00.000000Z"]
    );

    // A shorter grace period from the household settings.
    let settings = app.hh("/admin/settings");
    let patched = app
        .patch(
            &settings,
            &app.owner,
            json!({"household": {"missed_dose_grace_minutes": 30}}),
            None,
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["missed_dose_grace_minutes"], 30);
    app.patch(
        &settings,
        &app.owner,
        json!({"household": {"missed_dose_grace_minutes": 0}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");

    // The next day's dose is taken at 08:10: no missed-dose notification.
    let listed = app
        .get(&app.hh("/dose_occurrences?date=2026-03-11"), &app.owner)
        .await;
    let key = listed.data()[0]["occurrence_key"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &app.hh("/medication_takes"),
        &app.owner,
        json!({"medication_take": {"source_type": "schedule", "source_id": schedule.id,
            "taken_at": "2026-03-11T08:10:00Z", "occurrence_key": key}}),
    )
    .await
    .assert_status(201);
    clock.set("2026-03-11T12:00:00Z");
    engine.scan().await.unwrap();
    assert_eq!(
        due_times(&app, "missed_dose").await,
        ["2026-03-10T09:00:00.000000Z"]
    );
    // And the day after, not taken: missed 30 minutes after.
    clock.set("2026-03-12T08:29:00Z");
    engine.scan().await.unwrap();
    clock.set("2026-03-12T08:30:00Z");
    engine.scan().await.unwrap();
    assert_eq!(
        due_times(&app, "missed_dose").await,
        ["2026-03-10T09:00:00.000000Z", "2026-03-12T08:30:00.000000Z"]
    );
}

#[tokio::test]
async fn paused_retired_and_as_needed_sources_notify_nobody() {
    let app = TestApp::new().await;
    subscribe(&app, &app.owner, "https://push.example.test/owner").await;
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    let paused = daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    let retired = daily(&app, &olive, &med, "09:00", "2027-04-01").await;
    let running = daily(&app, &olive, &med, "10:00", "2027-04-01").await;
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {"source_type": "schedule",
            "source_id": paused.portable, "reason": "out_of_supply"}}),
    )
    .await
    .assert_status(201);
    app.delete(
        &app.hh(&format!("/schedules/{}", retired.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.post(
        &app.hh("/schedules"),
        &app.owner,
        json!({"schedule": {"person_id": olive.id, "medication_id": med.id,
            "schedule_type": "prn", "start_date": "2027-04-01"}}),
    )
    .await
    .assert_status(201);
    let clock = ManualClock::at("2027-04-02T00:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    clock.set("2027-04-02T12:00:00Z");
    engine.scan().await.unwrap();
    let rows = outbox(&app).await;
    let due: Vec<&str> = rows
        .iter()
        .filter(|r| r.1 == "dose_due")
        .map(|r| r.2.as_str())
        .collect();
    // 10:00 BST is 09:00 UTC: only the running schedule's dose.
    assert_eq!(
        due,
        ["2027-04-02T09:00:00.000000Z"],
        "{rows:?} {}",
        running.id
    );
}

#[tokio::test]
async fn only_members_who_may_view_the_person_are_told_and_private_text_hides_the_medicine() {
    let app = TestApp::new().await;
    subscribe(&app, &app.owner, "https://push.example.test/owner").await;
    let (max_membership, max) = app
        .add_member("max@example.org", Role::Member, Some("Max Member"))
        .await;
    subscribe(&app, &max, "https://push.example.test/max").await;
    let (_, nobody) = app
        .add_member("nobody@example.org", Role::Member, Some("Nora Nobody"))
        .await;
    subscribe(&app, &nobody, "https://push.example.test/nora").await;
    let olive = own_person(&app, &app.owner).await;
    let max_person = own_person(&app, &max).await;
    let med = new_medication(&app, "Metformin").await;
    daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    daily(&app, &max_person, &med, "09:00", "2027-04-01").await;
    // Max may also view Olive.
    grant(&app, max_membership, olive.id, "view").await;
    app.patch(
        &app.hh("/notification_preference"),
        &max,
        json!({"notification_preference": {"private_text_enabled": true}}),
        None,
    )
    .await
    .assert_status(200);

    let clock = ManualClock::at("2027-04-02T00:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    clock.set("2027-04-02T08:30:00Z");
    engine.scan().await.unwrap();
    let rows: Vec<_> = outbox(&app)
        .await
        .into_iter()
        .filter(|r| r.1 == "dose_due")
        .collect();
    let owner_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.0 == app.owner_membership_id)
        .collect();
    let max_rows: Vec<_> = rows.iter().filter(|r| r.0 == max_membership).collect();
    // Olive's 07:00 UTC dose to the owner and to Max; Max's own 08:00 dose to
    // both (the owner manages everyone); nothing to Nora.
    assert_eq!(owner_rows.len(), 2, "{rows:?}");
    assert_eq!(max_rows.len(), 2, "{rows:?}");
    assert_eq!(rows.len(), 4, "{rows:?}");
    let olive_to_owner = owner_rows
        .iter()
        .find(|r| r.2.starts_with("2027-04-02T07:00"))
        .unwrap();
    assert_eq!(olive_to_owner.3, "A dose for Olive Owner is due");
    // The medication's display name is its friendly name.
    assert!(!owner_rows.iter().any(|r| r.3.contains("Paracetamol")));
    let olive_to_max = max_rows
        .iter()
        .find(|r| r.2.starts_with("2027-04-02T07:00"))
        .unwrap();
    assert!(olive_to_max.3.contains("Paracetamol"), "{}", olive_to_max.3);
    assert!(olive_to_max.3.contains("08:00"), "{}", olive_to_max.3);

    // Preferences switched off: nothing more for the owner.
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"dose_due_enabled": false, "missed_dose_enabled": false}}),
        None,
    )
    .await
    .assert_status(200);
    clock.set("2027-04-03T08:30:00Z");
    engine.scan().await.unwrap();
    let later: Vec<_> = outbox(&app)
        .await
        .into_iter()
        .filter(|r| r.2.starts_with("2027-04-03") && r.1 == "dose_due")
        .collect();
    assert!(later.iter().all(|r| r.0 == max_membership), "{later:?}");
    assert_eq!(later.len(), 2);
}

#[tokio::test]
async fn a_signed_out_device_is_no_longer_reached() {
    let app = TestApp::new().await;
    let device = app
        .token_for(app.household_id, app.owner_membership_id)
        .await;
    subscribe(&app, &device, "https://push.example.test/old-phone").await;
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    // The device's credential is revoked.
    revoke_newest_token(&app, &device).await;
    clock.set("2027-04-02T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 0);
    assert!(outbox(&app).await.is_empty());
}

#[tokio::test]
async fn a_browser_signed_in_with_oauth_subscribes_and_signing_out_stops_its_reminders() {
    let app = TestApp::new().await;
    let (browser, _) = crate::support::sign_in::tokens(&app).await;
    subscribe(&app, &browser, "https://push.example.test/browser").await;
    // The session's subscription is its own: the owner's app token has none.
    app.post(&app.hh("/push_subscription/test"), &app.owner, json!({}))
        .await
        .assert_error(404, "not_found");
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    clock.set("2027-04-02T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 1);
    // Signing out ends the session: the browser is no longer reached.
    app.delete("/api/v1/auth/logout", &browser, None)
        .await
        .assert_status(204);
    clock.set("2027-04-03T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 0);
}

/// Revokes the app token `token`, as signing out or deleting it does.
async fn revoke_newest_token(app: &TestApp, token: &str) {
    app.get(&app.hh("/notification_preference"), token)
        .await
        .assert_status(200);
    app.db
        .write(|c| {
            // The newest token is the device's.
            c.execute(
                "UPDATE app_tokens SET revoked_at = ?1 WHERE id = (SELECT max(id) FROM app_tokens)",
                [pillbox::domain::Timestamp::now()],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&app.hh("/notification_preference"), token)
        .await
        .assert_status(401);
}

#[tokio::test]
async fn low_stock_is_told_once_per_episode() {
    let app = TestApp::new().await;
    subscribe(&app, &app.owner, "https://push.example.test/owner").await;
    let (_, nobody) = app
        .add_member("nobody@example.org", Role::Member, Some("Nora Nobody"))
        .await;
    subscribe(&app, &nobody, "https://push.example.test/nora").await;
    let olive = own_person(&app, &app.owner).await;
    // Paracetamol: supply 10.5, reorder threshold 4.
    let med = new_medication(&app, "Paracetamol").await;
    daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    let clock = ManualClock::at("2027-04-02T00:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    let count_to = |supply: &'static str| {
        let app = &app;
        let med = med.clone();
        async move {
            let current = app
                .get(&app.hh(&format!("/medications/{}", med.id)), &app.owner)
                .await;
            app.send(
                axum::http::Method::PATCH,
                &app.hh(&format!("/medications/{}/adjust_inventory", med.id)),
                Some(&app.owner),
                Some(json!({"adjustment": {"quantity": supply, "reason": "stock_count"}})),
                &[("if-match", current.etag().as_str())],
            )
            .await
            .assert_status(200);
        }
    };
    let low_rows = |app: &TestApp| {
        let db = app.db.clone();
        async move {
            db.read(|c| {
                let mut stmt = c.prepare(
                    "SELECT membership_id, body FROM reminder_outbox WHERE kind = 'low_stock'",
                )?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(rows)
            })
            .await
            .unwrap()
        }
    };
    count_to("3").await;
    clock.set("2027-04-02T00:10:00Z");
    engine.scan().await.unwrap();
    let rows = low_rows(&app).await;
    assert_eq!(
        rows,
        [(
            app.owner_membership_id,
            "A medicine for Olive Owner is running low".to_string()
        )]
    );
    // Still low, lower: the same episode.
    count_to("2").await;
    clock.set("2027-04-02T00:20:00Z");
    engine.scan().await.unwrap();
    assert_eq!(low_rows(&app).await.len(), 1);
    // Restocked, then low again: a new episode.
    count_to("30").await;
    clock.set("2027-04-02T00:30:00Z");
    engine.scan().await.unwrap();
    count_to("1").await;
    clock.set("2027-04-02T00:40:00Z");
    engine.scan().await.unwrap();
    assert_eq!(low_rows(&app).await.len(), 2);
}

// ------------------------------------------------------------ delivery

/// One request a test server received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

/// A push service (or ntfy server) on a free port that records each POST
/// and answers with the status the test sets.
pub struct TestService {
    pub addr: std::net::SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
    pub status: Arc<std::sync::atomic::AtomicU16>,
}

impl TestService {
    pub async fn start() -> TestService {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let status = Arc::new(std::sync::atomic::AtomicU16::new(201));
        let (seen, answer) = (received.clone(), status.clone());
        let app = axum::Router::new().route(
            "/{*path}",
            axum::routing::post(
                move |uri: axum::http::Uri,
                      headers: axum::http::HeaderMap,
                      body: axum::body::Bytes| {
                    let (seen, answer) = (seen.clone(), answer.clone());
                    async move {
                        seen.lock().unwrap().push(Received {
                            path: uri.path().to_string(),
                            headers,
                            body: body.to_vec(),
                        });
                        axum::http::StatusCode::from_u16(
                            answer.load(std::sync::atomic::Ordering::SeqCst),
                        )
                        .unwrap()
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        TestService {
            addr,
            received,
            status,
        }
    }

    pub fn answer(&self, status: u16) {
        self.status
            .store(status, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn hmac_sha256(key: &[u8], data: &[&[u8]]) -> [u8; 32] {
    use hmac::{KeyInit, Mac};
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key).unwrap();
    for part in data {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// RFC 8291 decryption written from the RFC for the test (HKDF as HMAC
/// steps, RFC 5869), independent of the server's encryption code.
pub fn decrypt(keys: &BrowserKeys, body: &[u8]) -> Vec<u8> {
    use aes_gcm::aead::{Aead, KeyInit};
    let salt = &body[..16];
    let record_size = u32::from_be_bytes(body[16..20].try_into().unwrap());
    assert!(record_size >= 18);
    let id_len = body[20] as usize;
    assert_eq!(
        id_len, 65,
        "the key id is the server's ephemeral public key"
    );
    let server_public = &body[21..21 + id_len];
    let ciphertext = &body[21 + id_len..];
    let server = p256::PublicKey::from_sec1_bytes(server_public).unwrap();
    let shared = p256::ecdh::diffie_hellman(keys.secret.to_nonzero_scalar(), server.as_affine());
    let prk_key = hmac_sha256(&keys.auth, &[shared.raw_secret_bytes().as_slice()]);
    let ikm = hmac_sha256(
        &prk_key,
        &[b"WebPush: info\0", &keys.public(), server_public, &[1]],
    );
    let prk = hmac_sha256(salt, &[&ikm]);
    let cek = hmac_sha256(&prk, &[b"Content-Encoding: aes128gcm\0", &[1]]);
    let nonce = hmac_sha256(&prk, &[b"Content-Encoding: nonce\0", &[1]]);
    let cipher = aes_gcm::Aes128Gcm::new_from_slice(&cek[..16]).unwrap();
    let nonce: [u8; 12] = nonce[..12].try_into().unwrap();
    let mut plain = cipher
        .decrypt(&nonce.into(), ciphertext)
        .expect("the payload decrypts with the subscription's private key");
    while plain.last() == Some(&0) {
        plain.pop();
    }
    assert_eq!(plain.pop(), Some(2), "one record, the last");
    plain
}

/// Checks a VAPID (RFC 8292) Authorization header: the JWT is signed
/// (ES256) by the key `k`, which is the server's advertised key, and names
/// the push service's origin.
pub fn verify_vapid(header: &str, advertised: &str, origin: &str) {
    use p256::ecdsa::signature::Verifier;
    let rest = header.strip_prefix("vapid ").expect("the vapid scheme");
    let mut token = None;
    let mut key = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(t) = part.strip_prefix("t=") {
            token = Some(t);
        } else if let Some(k) = part.strip_prefix("k=") {
            key = Some(k);
        }
    }
    let (token, key) = (token.unwrap(), key.unwrap());
    assert_eq!(key, advertised);
    let (signing_input, signature) = token.rsplit_once('.').unwrap();
    let (head, claims) = signing_input.split_once('.').unwrap();
    let head: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).unwrap()).unwrap();
    assert_eq!(head["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["aud"], origin);
    let now = jiff::Timestamp::now().as_second();
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp within 24 hours");
    assert!(!claims["sub"].as_str().unwrap().is_empty());
    let verifying =
        p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(key).unwrap()).unwrap();
    let signature =
        p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    verifying
        .verify(signing_input.as_bytes(), &signature)
        .expect("the JWT is signed with the advertised key");
}

async fn statuses(app: &TestApp) -> Vec<String> {
    outbox(app).await.into_iter().map(|r| r.4).collect()
}

#[tokio::test]
async fn web_push_is_encrypted_signed_retried_and_a_gone_subscription_removed() {
    let push = TestService::start().await;
    let app = TestApp::with_settings(allow_http()).await;
    let endpoint = format!("http://{}/push/olive-device", push.addr);
    let keys = subscribe(&app, &app.owner, &endpoint).await;
    let advertised = app.get("/api/v1/capabilities", "").await.data()["notifications"]
        ["web_push_vapid_public_key"]
        .as_str()
        .unwrap()
        .to_string();
    let test = app.hh("/push_subscription/test");
    app.post(&test, &app.owner, json!({}))
        .await
        .assert_status(204);

    let clock =
        ManualClock::at(&(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1)).to_string());
    let engine = engine(&app, &clock).await;
    assert_eq!(engine.deliver().await.unwrap(), 1);
    let got = push.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/push/olive-device");
    assert_eq!(got[0].headers["content-encoding"], "aes128gcm");
    assert!(
        got[0].headers["ttl"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    verify_vapid(
        got[0].headers["authorization"].to_str().unwrap(),
        &advertised,
        &format!("http://{}", push.addr),
    );
    let payload: Value = serde_json::from_slice(&decrypt(&keys, &got[0].body)).unwrap();
    assert_eq!(payload["kind"], "test");
    assert_eq!(payload["title"], "Pillbox test");
    assert_eq!(statuses(&app).await, ["delivered"]);
    // Delivered once: another pass sends nothing.
    assert_eq!(engine.deliver().await.unwrap(), 0);
    assert_eq!(push.received().len(), 1);

    // A busy push service: retried after a back-off.
    push.answer(503);
    app.post(&test, &app.owner, json!({}))
        .await
        .assert_status(204);
    clock.set(&(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1)).to_string());
    engine.deliver().await.unwrap();
    assert_eq!(push.received().len(), 2);
    assert_eq!(statuses(&app).await, ["delivered", "pending"]);
    assert_eq!(
        engine.deliver().await.unwrap(),
        0,
        "not before the back-off"
    );
    push.answer(201);
    clock.set(&(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(40)).to_string());
    assert_eq!(engine.deliver().await.unwrap(), 1);
    assert_eq!(push.received().len(), 3);
    assert_eq!(statuses(&app).await, ["delivered", "delivered"]);

    // Too late to send: dropped and counted.
    app.post(&test, &app.owner, json!({}))
        .await
        .assert_status(204);
    clock.set(&(jiff::Timestamp::now() + jiff::SignedDuration::from_hours(7)).to_string());
    engine.deliver().await.unwrap();
    assert_eq!(push.received().len(), 3);
    assert_eq!(statuses(&app).await, ["delivered", "delivered", "dropped"]);

    // 410: the push service forgot the subscription; so do we.
    push.answer(410);
    app.post(&test, &app.owner, json!({}))
        .await
        .assert_status(204);
    clock.set(&(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1)).to_string());
    engine.deliver().await.unwrap();
    assert_eq!(push.received().len(), 4);
    app.post(&test, &app.owner, json!({}))
        .await
        .assert_status(404);
    let subscriptions: i64 = app
        .db
        .read(|c| Ok(c.query_row("SELECT count(*) FROM push_subscriptions", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(subscriptions, 0);

    // Administrators see it.
    let settings = app.get(&app.hh("/admin/settings"), &app.owner).await;
    settings.assert_status(200);
    let health = settings.data()["delivery_health"].as_array().unwrap();
    let web = health.iter().find(|h| h["channel"] == "web_push").unwrap();
    assert_eq!(web["delivered_count"], 2);
    assert_eq!(web["dropped_count"], 1);
    assert_eq!(web["failed_count"], 1);
    assert_eq!(web["pending_count"], 0);
    assert_eq!(web["enabled"], true);
    assert!(web["last_delivered_at"].is_string());
    assert!(!web["last_error"].as_str().unwrap().contains("olive-device"));
    let fcm = health.iter().find(|h| h["channel"] == "fcm").unwrap();
    assert_eq!(fcm["enabled"], false);
}

#[tokio::test]
async fn a_due_dose_reaches_the_members_ntfy_topic() {
    let ntfy = TestService::start().await;
    ntfy.answer(200);
    let app = TestApp::with_settings(allow_http()).await;
    app.put(
        &app.hh("/ntfy_channel"),
        &app.owner,
        json!({"ntfy_channel": {"topic_url": format!("http://{}/olive-pills", ntfy.addr)}}),
        None,
    )
    .await
    .assert_status(200);
    let olive = own_person(&app, &app.owner).await;
    let med = new_medication(&app, "Metformin").await;
    daily(&app, &olive, &med, "08:00", "2027-04-01").await;
    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = engine(&app, &clock).await;
    engine.scan().await.unwrap();
    clock.set("2027-04-02T07:00:00Z");
    assert_eq!(engine.scan().await.unwrap().queued, 1);
    engine.deliver().await.unwrap();
    let got = ntfy.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/olive-pills");
    assert_eq!(got[0].headers["title"], "Dose due");
    assert_eq!(
        String::from_utf8(got[0].body.clone()).unwrap(),
        "A dose for Olive Owner is due"
    );
    assert_eq!(statuses(&app).await, ["delivered"]);
}

// ------------------------------------------------------------ restarts

mod restart {
    use std::path::Path;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::{Value, json};

    use super::{BrowserKeys, TestService, decrypt};
    use crate::support::process::{
        Guard, free_port, http_request, pillbox, set_up_household, token_create, wait_until_serving,
    };

    fn serve(data: &Path, port: u16, log: &Path) -> Guard {
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = pillbox(&[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &listen,
            "--rate-limit",
            "0",
        ]);
        cmd.env("PILLBOX_PUSH_ALLOW_HTTP", "1")
            .env("PILLBOX_PUSH_ALLOW_PRIVATE_NETWORK", "1");
        let log_file = std::fs::File::create(log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file));
        let mut server = Guard(cmd.spawn().unwrap());
        wait_until_serving(&mut server, port);
        server
    }

    fn call(port: u16, method: &str, path: &str, token: &str, body: Value) -> Value {
        let text = body.to_string();
        let response = http_request(
            port,
            method,
            path,
            Some(token),
            &[("content-type", "application/json")],
            (!body.is_null()).then_some(text.as_str()),
        )
        .unwrap();
        assert!(
            response.status < 300,
            "{method} {path}: {} {}",
            response.status,
            response.body
        );
        response.json()
    }

    fn kill(server: &mut Guard) {
        server.0.kill().unwrap();
        server.0.wait().unwrap();
    }

    /// Waits until the service has received `count` requests (at most 15 s).
    fn wait_for(service: &TestService, count: usize) {
        let end = Instant::now() + Duration::from_secs(15);
        while service.received().len() < count && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn a_dose_due_while_stopped_is_sent_once_after_start_and_never_again() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let push = runtime.block_on(TestService::start());
        let (dir, data, household) = set_up_household();
        let token = token_create(&data, &household, "owner@example.org", &[]);
        token.assert_success();
        let token = token.single_stdout_line().to_string();
        let hh = |rest: &str| format!("/api/v1/households/{household}{rest}");
        let port = free_port();
        let log = dir.path().join("serve.log");
        let mut server = serve(&data, port, &log);

        let keys = BrowserKeys::new();
        let endpoint = format!("http://{}/push/olive-phone", push.addr);
        call(
            port,
            "POST",
            &hh("/push_subscription"),
            &token,
            json!({"push_subscription": {
                "endpoint": endpoint,
                "p256dh": URL_SAFE_NO_PAD.encode(keys.public()),
                "auth": URL_SAFE_NO_PAD.encode(keys.auth),
            }}),
        );
        let person = call(
            port,
            "GET",
            &hh("/notification_preference"),
            &token,
            Value::Null,
        )["data"]["person_id"]
            .as_i64()
            .unwrap();
        let medication = call(
            port,
            "POST",
            &hh("/medications"),
            &token,
            json!({"medication": {
            "name": "Metformin", "dose_amount": "1", "dose_unit": "tablet"}}),
        )["data"]["id"]
            .as_i64()
            .unwrap();
        // A daily dose half an hour ago: already past when the schedule is
        // made, so this run owes nothing.
        let tz = jiff::tz::TimeZone::get("Europe/London").unwrap();
        let due =
            (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30)).to_zoned_datetime(tz);
        let start = due.date().yesterday().unwrap();
        call(
            port,
            "POST",
            &hh("/schedules"),
            &token,
            json!({"schedule": {
            "person_id": person, "medication_id": medication, "schedule_type": "daily",
            "schedule_config": {"times": [due.strftime("%H:%M").to_string()]},
            "start_date": start.to_string()}}),
        );
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(push.received().len(), 0);
        kill(&mut server);

        // As far as reminders know, the server stopped two hours ago.
        let db = rusqlite::Connection::open(data.join("pillbox.sqlite3")).unwrap();
        let stopped = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
        let stopped = stopped.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        assert_eq!(
            db.execute(
                "UPDATE reminder_households SET scanned_until = ?1",
                [&stopped]
            )
            .unwrap(),
            1
        );
        drop(db);

        let mut server = serve(&data, port, &log);
        wait_for(&push, 1);
        let got = push.received();
        assert_eq!(
            got.len(),
            1,
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let payload: Value = serde_json::from_slice(&decrypt(&keys, &got[0].body)).unwrap();
        assert_eq!(payload["kind"], "dose_due");
        assert_eq!(payload["body"], "A dose for Olive Owner is due");
        // The push service has answered; the delivery is recorded just after.
        let delivered = || {
            let settings = call(port, "GET", &hh("/admin/settings"), &token, Value::Null);
            settings["data"]["delivery_health"]
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["channel"] == "web_push")
                .unwrap()["delivered_count"]
                .clone()
        };
        let end = Instant::now() + Duration::from_secs(10);
        while delivered() != 1 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(delivered(), 1);
        // Delivered, then killed without warning: never sent again.
        kill(&mut server);
        let mut server = serve(&data, port, &log);
        std::thread::sleep(Duration::from_millis(2000));
        assert_eq!(push.received().len(), 1);
        // The task sleeps until the next reminder (the missed-dose one, half
        // an hour away), yet a write wakes it: a test notification arrives
        // at once.
        let asked = Instant::now();
        let test = http_request(
            port,
            "POST",
            &hh("/push_subscription/test"),
            Some(&token),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(test.status, 204);
        wait_for(&push, 2);
        assert!(asked.elapsed() < Duration::from_secs(10));
        let got = push.received();
        assert_eq!(got.len(), 2);
        let payload: Value = serde_json::from_slice(&decrypt(&keys, &got[1].body)).unwrap();
        assert_eq!(payload["kind"], "test");
        let end = Instant::now() + Duration::from_secs(10);
        while delivered() != 2 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(delivered(), 2);
        kill(&mut server);
    }

    #[test]
    fn incomplete_or_unreadable_phone_push_settings_stop_the_server_with_one_line() {
        let (dir, data, _) = set_up_household();
        let listen = format!("127.0.0.1:{}", free_port());
        let data = data.to_str().unwrap();
        let partial = pillbox(&[
            "serve",
            "--data-dir",
            data,
            "--listen",
            &listen,
            "--apns-key-id",
            "ABC123DEFG",
        ]);
        crate::support::process::run(partial, None).assert_one_line_failure("APNs needs all of");
        let missing = dir.path().join("missing.json");
        let unreadable = pillbox(&[
            "serve",
            "--data-dir",
            data,
            "--listen",
            &listen,
            "--fcm-service-account",
            missing.to_str().unwrap(),
        ]);
        crate::support::process::run(unreadable, None)
            .assert_one_line_failure("cannot read the FCM service account");
        let not_a_key = dir.path().join("account.json");
        std::fs::write(
            &not_a_key,
            r#"{"project_id": "p", "client_email": "e", "private_key": "not a key"}"#,
        )
        .unwrap();
        let bad = pillbox(&[
            "serve",
            "--data-dir",
            data,
            "--listen",
            &listen,
            "--fcm-service-account",
            not_a_key.to_str().unwrap(),
        ]);
        let outcome = crate::support::process::run(bad, None);
        outcome.assert_one_line_failure("not an RSA key");
        assert!(!outcome.stderr.contains("not a key"));
    }
}

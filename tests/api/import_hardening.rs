//! Imports cost nothing to callers who may not import, key derivations
//! queue on a bounded pool of their own, and a dry run tells nothing of
//! other households' records.

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::config::Settings;
use pillbox::portable::envelope::{self, KdfParams, Passphrase};
use serde_json::{Value, json};

use crate::portable::PASSPHRASE;
use crate::support::records::{grant, new_person};
use crate::support::{TestApp, TestResponse};

const HEADER: &str = "X-Service-Portable-Passphrase";
const DRY_RUN: &str = "/portable_imports/dry_run";
const IMPORT: &str = "/portable_imports";

/// Cheap parameters: the test itself seals without the server's pool.
const CHEAP: KdfParams = KdfParams {
    memory_kib: 64,
    iterations: 1,
    parallelism: 1,
};

fn sealed(records: Value) -> Value {
    let payload = json!({"format": "service.portable.v1", "records": records});
    let passphrase = Passphrase::new(Some(PASSPHRASE)).unwrap();
    let envelope =
        envelope::seal_with(payload.to_string().into_bytes(), &passphrase, CHEAP).unwrap();
    serde_json::to_value(envelope).unwrap()
}

async fn post_as(app: &TestApp, token: &str, path: &str, bundle: &Value) -> TestResponse {
    app.send(
        Method::POST,
        &app.hh(path),
        Some(token),
        Some(bundle.clone()),
        &[(HEADER, PASSPHRASE)],
    )
    .await
}

#[tokio::test]
async fn a_member_who_may_not_import_costs_no_key_derivation() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    // A carer who records Ada's doses and manages nobody.
    let (carer, token) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, carer, ada.id, "record").await;
    let cheap = sealed(json!({}));
    // Valid parameters at the envelope's limits: derived, this would take
    // 256 MiB and seconds before the cipher said the bundle was changed.
    let mut costly = cheap.clone();
    costly["kdf_params"] = json!({"memory_kib": 262144, "iterations": 10, "parallelism": 4});
    for bundle in [&cheap, &costly] {
        for path in [DRY_RUN, IMPORT] {
            post_as(&app, &token, path, bundle)
                .await
                .assert_error(403, "forbidden");
        }
    }
    assert_eq!(kdf(&app).started(), 0, "no key derivation ran");
    // The counter counts: the owner's dry run derives once.
    post_as(&app, &app.owner, DRY_RUN, &cheap)
        .await
        .assert_status(200);
    assert_eq!(kdf(&app).started(), 1);
    // Managing someone is enough to import (what it may change is checked
    // record by record).
    grant(&app, carer, ada.id, "manage").await;
    post_as(&app, &token, DRY_RUN, &cheap)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn derivations_beyond_the_queue_are_answered_429_with_retry_after() {
    let app = TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        kdf_workers: 1,
        kdf_queue: 1,
        ..Settings::default()
    })
    .await;
    let bundle = sealed(json!({}));
    // The one worker is busy until the test lets it go.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let pool = kdf(&app).clone();
    let holder = tokio::spawn(async move {
        pool.run(move || {
            let _ = held.recv();
            Ok(())
        })
        .await
    });
    while kdf(&app).started() == 0 {
        tokio::task::yield_now().await;
    }
    let queued = post_as(&app, &app.owner, DRY_RUN, &bundle);
    let beyond = async {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while kdf(&app).waiting() == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let waited = kdf(&app).waiting() == 1;
        // Answered at once, or never while the worker is held.
        let soon = std::time::Duration::from_secs(10);
        let import = tokio::time::timeout(soon, post_as(&app, &app.owner, DRY_RUN, &bundle)).await;
        let export = tokio::time::timeout(soon, crate::portable::export(&app, "")).await;
        release.send(()).unwrap();
        (waited, import, export)
    };
    let (queued, (waited, import, export)) = tokio::join!(queued, beyond);
    assert!(waited, "the first import waited for the busy worker");
    for refused in [import, export] {
        let refused = refused.expect("answered without waiting for the worker");
        refused.assert_error(429, "rate_limited");
        let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
        assert!(wait >= 1);
    }
    // The one that waited its turn ran once the worker was free.
    queued.assert_status(200);
    holder.await.unwrap().unwrap();
    assert_eq!(kdf(&app).waiting(), 0);
}

/// The server's pool of key derivations.
fn kdf(app: &TestApp) -> &std::sync::Arc<pillbox::portable::kdf_pool::KdfPool> {
    app.state.part::<pillbox::portable::kdf_pool::KdfPool>()
}

/// What an import answers, without what differs between any two bundles
/// (the ids it names).
fn answer_without_ids(got: &TestResponse, ids: &[&str]) -> String {
    let mut text = got.body.to_string();
    for id in ids {
        text = text.replace(id, "<id>");
    }
    text
}

#[tokio::test]
async fn a_dry_run_answers_the_same_for_another_households_id_as_for_a_free_one() {
    let app = TestApp::new().await;
    let (other, other_owner) = app.other_household("Next door", "next@example.org").await;
    let theirs = app
        .post(
            &format!("/api/v1/households/{other}/people"),
            &other_owner,
            json!({"person": {"name": "Neighbour", "date_of_birth": "1950-02-03"}}),
        )
        .await;
    theirs.assert_status(201);
    let taken = theirs.data()["portable_id"].as_str().unwrap().to_string();
    let free = pillbox::db::new_portable_id();
    let bundle = |id: &str| {
        sealed(json!({"people": [{
            "portable_id": id, "name": "Someone", "email": null, "date_of_birth": null,
            "person_type": "adult", "has_capacity": true, "location_portable_ids": [],
            "notification_preference_portable_id": null,
        }]}))
    };
    for path in [DRY_RUN, IMPORT] {
        let on_taken = post_as(&app, &app.owner, path, &bundle(&taken)).await;
        let on_free = post_as(&app, &app.owner, path, &bundle(&free)).await;
        assert_eq!(on_taken.status, on_free.status, "{}", on_taken.body);
        assert_eq!(
            answer_without_ids(&on_taken, &[&taken]),
            answer_without_ids(&on_free, &[&free]),
            "{path}"
        );
    }
    // Each household reads its own record under the shared id.
    let named = |list: &TestResponse| -> Vec<String> {
        list.data()
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["portable_id"] == taken.as_str())
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    let ours = app.get(&app.hh("/people"), &app.owner).await;
    assert_eq!(named(&ours), ["Someone"]);
    let next_door = app
        .get(&format!("/api/v1/households/{other}/people"), &other_owner)
        .await;
    assert_eq!(named(&next_door), ["Neighbour"]);
}

#[tokio::test]
async fn a_household_moved_onto_a_server_beside_its_copy_keeps_every_id() {
    // The household of the portable tests, exported and imported into a
    // second household of the same server: every record keeps its id in
    // both, and the first household is untouched.
    let app = TestApp::new().await;
    crate::portable::household(&app).await;
    let before = crate::portable::snapshot(&app).await;
    let exported = crate::portable::export(&app, "?portable_format=service.portable.v2").await;
    exported.assert_status(200);
    let (other, other_owner) = app.other_household("Copy", "copy@example.org").await;
    let into_other = |path: &str| format!("/api/v1/households/{other}{path}");
    for path in [DRY_RUN, IMPORT] {
        let got = app
            .send(
                Method::POST,
                &into_other(path),
                Some(&other_owner),
                Some(exported.data().clone()),
                &[(HEADER, PASSPHRASE)],
            )
            .await;
        assert!(got.status == 200 || got.status == 201, "{}", got.body);
        assert_eq!(got.data()["errors"], json!([]), "{}", got.body);
        assert_eq!(got.data()["conflicts"], json!([]), "{}", got.body);
    }
    assert_eq!(
        crate::portable::snapshot(&app).await["records"],
        before["records"]
    );
    let copy = app.get(&into_other("/sync/snapshot"), &other_owner).await;
    copy.assert_status(200);
    for collection in ["people", "medications", "schedules", "medication_takes"] {
        let ids = |snapshot: &Value| -> Vec<String> {
            let mut ids: Vec<String> = snapshot["records"][collection]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["portable_id"].as_str().unwrap().to_string())
                .collect();
            ids.sort();
            ids
        };
        let original = ids(&before);
        assert!(!original.is_empty(), "{collection}");
        // The copy's owner is a person of its own; the rest are the same.
        assert!(
            original.iter().all(|id| ids(copy.data()).contains(id)),
            "{collection}"
        );
    }
}

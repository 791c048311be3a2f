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

//! Failed sign-ins slow down, per account and per address, with growing
//! delays; every success and failure is an audit event.

use axum::http::StatusCode;

use crate::support::sign_in::{OWNER_EMAIL, html, pkce, sign_in, submit_password};
use crate::support::{PASSWORD, TestApp};

/// (failures, seconds between the last failure and the end of the wait).
async fn counter(app: &TestApp, key: &str) -> Option<(i64, Option<i64>)> {
    let key = key.to_string();
    app.db
        .read(move |conn| {
            use rusqlite::OptionalExtension;
            Ok(conn
                .query_row(
                    "SELECT failures,
                            CAST(round((julianday(locked_until) - julianday(last_failure_at)) * 86400) AS INTEGER)
                     FROM sign_in_failures WHERE key = ?1",
                    [key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?)
        })
        .await
        .unwrap()
}

/// As if the wait had passed.
async fn wait_out(app: &TestApp) {
    app.db
        .write(|tx| {
            Ok(tx.execute(
                "UPDATE sign_in_failures SET locked_until = '2000-01-01T00:00:00.000000Z'",
                [],
            )?)
        })
        .await
        .unwrap();
}

async fn attempt(app: &TestApp, email: &str, password: &str) -> crate::support::TestResponse {
    let (_, challenge) = pkce();
    submit_password(app, &challenge, "s", email, password)
        .await
        .0
}

async fn events(app: &TestApp, event_type: &str) -> i64 {
    let event_type = event_type.to_string();
    app.db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT count(*) FROM sign_in_events WHERE event_type = ?1",
                [event_type],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn repeated_failures_of_an_account_wait_longer_each_time_and_are_audited() {
    let app = TestApp::new().await;
    let key = "account:owner@example.org";
    for _ in 0..5 {
        attempt(&app, OWNER_EMAIL, "wrong password here")
            .await
            .assert_status(401);
    }
    assert_eq!(counter(&app, key).await, Some((5, None)), "five are free");
    attempt(&app, OWNER_EMAIL, "wrong password here")
        .await
        .assert_status(401);
    assert_eq!(counter(&app, key).await, Some((6, Some(1))));

    // While waiting, even the right password is refused, with Retry-After.
    let refused = attempt(&app, OWNER_EMAIL, PASSWORD).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        refused
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(html(&refused).contains("Too many sign-in attempts"));
    assert!(refused.header("location").is_none());

    // Each further failure doubles the wait.
    wait_out(&app).await;
    attempt(&app, OWNER_EMAIL, "wrong password here")
        .await
        .assert_status(401);
    assert_eq!(counter(&app, key).await, Some((7, Some(2))));
    wait_out(&app).await;
    attempt(&app, OWNER_EMAIL, "wrong password here")
        .await
        .assert_status(401);
    assert_eq!(counter(&app, key).await, Some((8, Some(4))));

    // A success (once the wait is over) clears the account's count.
    wait_out(&app).await;
    let (_, challenge) = pkce();
    sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    assert_eq!(counter(&app, key).await, None);

    // Audited: every failure, the refusal and the success, in the
    // account's events and in the household's audit log.
    assert_eq!(events(&app, "sign_in.failed").await, 8);
    assert_eq!(events(&app, "sign_in.throttled").await, 1);
    assert_eq!(events(&app, "sign_in.succeeded").await, 1);
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    let failed = log
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "sign_in.failed")
        .count();
    assert_eq!(failed, 8);
    assert!(!log.body.to_string().contains("wrong password here"));
}

#[tokio::test]
async fn an_unknown_email_is_slowed_like_a_known_one_and_an_address_is_limited_too() {
    let app = TestApp::new().await;
    for _ in 0..6 {
        attempt(&app, "nobody@example.org", PASSWORD)
            .await
            .assert_status(401);
    }
    assert_eq!(
        counter(&app, "account:nobody@example.org").await,
        Some((6, Some(1)))
    );
    let refused = attempt(&app, "nobody@example.org", PASSWORD).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);

    // Ten failures from one address, whatever the emails, make it wait.
    wait_out(&app).await;
    for n in 0..4 {
        attempt(&app, &format!("guess{n}@example.org"), PASSWORD)
            .await
            .assert_status(401);
    }
    let address = "address:unknown";
    assert_eq!(counter(&app, address).await, Some((10, None)));
    attempt(&app, "guess-last@example.org", PASSWORD)
        .await
        .assert_status(401);
    assert_eq!(counter(&app, address).await, Some((11, Some(1))));
    // The owner, from that address, waits too (until the address's wait ends).
    let refused = attempt(&app, OWNER_EMAIL, PASSWORD).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let unknown_events: i64 = app
        .db
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT count(*) FROM sign_in_events WHERE account_id IS NULL AND event_type = 'sign_in.failed'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(unknown_events, 11);
}

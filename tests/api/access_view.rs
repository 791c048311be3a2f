//! Requests are authenticated from an in-memory view of credentials and
//! memberships (src/auth/view.rs). Each test first uses the credential so
//! that the view holds its rows, then changes access, and expects the very
//! next request to see the change.

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::db::DATABASE_FILE;
use serde_json::json;

use crate::support::TestApp;
use crate::support::sign_in::tokens;

/// A member whose token has been used (so the view holds it) and a person
/// of the household nobody has granted them.
async fn warmed_member(app: &TestApp) -> (i64, String) {
    let (member_id, token) = app
        .add_member("member@example.org", Role::Member, Some("Mo"))
        .await;
    for _ in 0..3 {
        app.get(&app.hh("/people"), &token).await.assert_status(200);
    }
    (member_id, token)
}

/// What `pillbox token revoke` run beside the server does to the member's
/// tokens: a commit on a connection of its own.
fn revoke_from_another_connection(app: &TestApp, member_id: i64) {
    let other = rusqlite::Connection::open(app.dir.path().join(DATABASE_FILE)).unwrap();
    other
        .execute(
            "UPDATE app_tokens SET revoked_at = '2020-01-01T00:00:00.000000Z' WHERE membership_id = ?1",
            [member_id],
        )
        .unwrap();
}

async fn revoke_after_use(app: &TestApp) {
    let created = app
        .post(
            &app.hh("/admin/app_tokens"),
            &app.owner,
            json!({"api_app_token": {"name": "integration"}}),
        )
        .await;
    created.assert_status(201);
    let token = created.data()["token"].as_str().unwrap().to_string();
    for _ in 0..3 {
        app.get(&app.hh("/people"), &token).await.assert_status(200);
    }
    app.delete(
        &app.hh(&format!("/admin/app_tokens/{}", created.id())),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn a_revoked_app_token_fails_on_the_very_next_request() {
    revoke_after_use(&TestApp::new().await).await;
    // With the rate limiter on, it verifies the credential (from the same view).
    revoke_after_use(&TestApp::with_settings(pillbox::config::Settings::default()).await).await;
}

#[tokio::test]
async fn a_change_made_by_another_process_is_seen_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    revoke_from_another_connection(&app, member_id);
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn a_view_that_let_go_while_quiet_opens_again_and_stays_current() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    // What `pillbox serve` does once nobody has asked anything for a moment.
    app.db
        .attached::<pillbox::auth::view::AccessView>()
        .let_go();
    app.get(&app.hh("/people"), &token).await.assert_status(200);
    app.db
        .attached::<pillbox::auth::view::AccessView>()
        .let_go();
    revoke_from_another_connection(&app, member_id);
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn a_suspended_member_is_refused_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    let path = app.hh(&format!("/admin/memberships/{member_id}"));
    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"status": "suspended"}}),
        None,
    )
    .await
    .assert_status(200);
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"status": "active"}}),
        None,
    )
    .await
    .assert_status(200);
    app.get(&app.hh("/people"), &token).await.assert_status(200);
}

#[tokio::test]
async fn role_and_grant_changes_apply_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    let person = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "Pat", "date_of_birth": "1990-05-01"}}),
        )
        .await;
    person.assert_status(201);
    let pat = app.hh(&format!("/people/{}", person.id()));
    app.get(&pat, &token).await.assert_error(404, "not_found");

    let grant = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            json!({"person_access_grant": {
                "membership_id": member_id, "person_id": person.id(),
                "access_level": "view", "relationship_type": "carer",
            }}),
        )
        .await;
    grant.assert_status(201);
    app.get(&pat, &token).await.assert_status(200);
    app.delete(
        &app.hh(&format!("/admin/person_access_grants/{}", grant.id())),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&pat, &token).await.assert_error(404, "not_found");

    // A role change: an administrator sees everyone, at once.
    app.patch(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &app.owner,
        json!({"household_membership": {"role": "administrator"}}),
        None,
    )
    .await
    .assert_status(200);
    app.get(&pat, &token).await.assert_status(200);
    app.get(&app.hh("/admin/memberships"), &token)
        .await
        .assert_status(200);
    app.patch(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &app.owner,
        json!({"household_membership": {"role": "member"}}),
        None,
    )
    .await
    .assert_status(200);
    app.get(&app.hh("/admin/memberships"), &token)
        .await
        .assert_error(403, "forbidden");
}

#[tokio::test]
async fn a_removed_member_is_refused_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    app.delete(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
    app.raw(
        Method::GET,
        "/api/v1/auth/households",
        Some(&token),
        None,
        &[],
    )
    .await
    .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn a_signed_out_session_is_refused_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (access, _refresh) = tokens(&app).await;
    for _ in 0..3 {
        app.get(&app.hh("/people"), &access)
            .await
            .assert_status(200);
    }
    app.delete("/api/v1/auth/logout", &access, None)
        .await
        .assert_status(204);
    app.get(&app.hh("/people"), &access)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn after_commits_that_change_no_access_a_revocation_is_still_seen_on_the_very_next_request() {
    let app = TestApp::new().await;
    let (member_id, token) = warmed_member(&app).await;
    // Commits that touch no credential or membership: the view keeps its
    // rows across them (the access stamp is unchanged)...
    for name in ["Tablets", "Drops"] {
        app.post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": name}}),
        )
        .await
        .assert_status(201);
        app.get(&app.hh("/people"), &token).await.assert_status(200);
    }
    // ...and still drops them at the first commit that does, from anywhere.
    let other = rusqlite::Connection::open(app.dir.path().join(DATABASE_FILE)).unwrap();
    other
        .execute(
            "UPDATE memberships SET status = 'suspended' WHERE id = ?1",
            [member_id],
        )
        .unwrap();
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
}

#[test]
fn every_write_to_a_table_the_view_keeps_changes_the_access_stamp() {
    crate::support::assert_every_write_moves_the_stamp(
        "access_stamp",
        &[
            "app_tokens",
            "memberships",
            "oauth_sessions",
            "oauth_tokens",
        ],
    );
}

/// `pillbox token revoke` run beside `pillbox serve`: a commit by another
/// process, which the server learns of from the WAL index they share.
#[test]
fn a_token_revoked_by_a_command_beside_the_server_fails_on_its_very_next_request() {
    use crate::cli_admin::admin;
    use crate::support::process::{free_port, http_get, serve, set_up_household, token_create};

    let (dir, data, household) = set_up_household();
    let created = token_create(&data, &household, "owner@example.org", &[]);
    let token = created.assert_success().single_stdout_line().to_string();
    let port = free_port();
    let _server = serve(&data, port, &dir.path().join("serve.log"));
    let people = format!("/api/v1/households/{household}/people");
    for _ in 0..3 {
        assert_eq!(http_get(port, &people, Some(&token)).unwrap().status, 200);
    }

    let h = ["--household", household.as_str()];
    let list = admin(&data, &["token", "list"], &h);
    let id = list.assert_success().stdout.lines().nth(1).unwrap();
    let id = id.split_whitespace().next().unwrap();
    admin(&data, &["token", "revoke"], &[h[0], h[1], "--id", id]).assert_success();

    assert_eq!(http_get(port, &people, Some(&token)).unwrap().status, 401);
}

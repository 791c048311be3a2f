//! Invitations do not outlive the authority that made them (issue 48 item
//! 3): removing, suspending or demoting the inviter revokes their pending
//! invitations in the same change, audited, through the API and the host
//! operator's `pillbox member`; an inviter who keeps their role keeps them.

use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::invitations::open;
use crate::support::invitations::{session_for, token_of};
use crate::support::sign_in::html;
use crate::support::{TestApp, TestResponse};

/// An invitation for `email` with `role`, made with `credential`; answers
/// (id, token).
async fn invite(app: &TestApp, credential: &str, email: &str, role: &str) -> (i64, String) {
    let r = app
        .post(
            &app.hh("/admin/invitations"),
            credential,
            json!({"household_invitation": {
                "email": email,
                "role": role,
                "person": {"name": "Someone New", "date_of_birth": "1990-01-01"},
            }}),
        )
        .await;
    r.assert_status(201);
    (r.id(), token_of(r.data()))
}

/// The invitee signs up and accepts.
async fn accept(app: &TestApp, email: &str, token: &str) -> TestResponse {
    let session = session_for(app, email).await;
    app.post(
        "/api/v1/invitations/accept",
        &session,
        json!({ "token": token }),
    )
    .await
}

#[track_caller]
fn assert_unavailable(response: &TestResponse) {
    response.assert_error(422, "invitation_unavailable");
}

async fn change_membership(app: &TestApp, id: i64, attributes: Value) {
    app.patch(
        &app.hh(&format!("/admin/memberships/{id}")),
        &app.owner,
        json!({ "household_membership": attributes }),
        None,
    )
    .await
    .assert_status(200);
}

/// (actor membership, metadata) of the `invitation.revoked` events of an invitation.
async fn revocations(app: &TestApp, invitation: i64) -> Vec<(Option<i64>, Value)> {
    app.db
        .read(move |conn| {
            Ok(conn
                .prepare(
                    "SELECT actor_membership_id, metadata FROM audit_events
                     WHERE event_type = 'invitation.revoked' AND subject_id = ?1",
                )?
                .query_map([invitation], |r| {
                    let metadata: String = r.get(1)?;
                    Ok((r.get(0)?, serde_json::from_str(&metadata).unwrap()))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
        .unwrap()
}

#[track_caller]
fn assert_revoked_for(events: &[(Option<i64>, Value)], actor: Option<i64>, reason: &str) {
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, actor, "{events:?}");
    assert_eq!(events[0].1["reason"], reason, "{events:?}");
}

/// The ids of the household's invitations still listed (revoked ones are not).
async fn listed(app: &TestApp) -> Vec<i64> {
    let r = app
        .get(&app.hh("/admin/invitations?per_page=100"), &app.owner)
        .await;
    r.assert_status(200);
    r.data()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn removing_the_inviter_revokes_their_invitations_and_no_one_elses() {
    let app = TestApp::new().await;
    let (ada, ada_token) = app
        .add_member("ada@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let (theirs, their_token) = invite(&app, &ada_token, "new@example.org", "member").await;
    let (mine, my_token) = invite(&app, &app.owner, "kept@example.org", "member").await;
    assert_eq!(open(&app, &their_token).await.status.as_u16(), 200);

    app.delete(
        &app.hh(&format!("/admin/memberships/{ada}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    assert_eq!(listed(&app).await, [mine]);
    assert_revoked_for(
        &revocations(&app, theirs).await,
        Some(app.owner_membership_id),
        "inviter_removed",
    );
    let removal: String = app
        .db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT metadata FROM audit_events
                 WHERE event_type = 'membership.revoked' AND subject_id = ?1",
                [ada],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&removal).unwrap()["revoked_invitations"],
        1
    );

    // Neither the API nor the invitation's own page accepts it now.
    assert_unavailable(&accept(&app, "new@example.org", &their_token).await);
    let page = open(&app, &their_token).await;
    page.assert_status(404);
    assert!(html(&page).contains("no longer valid"));
    // The owner, who keeps their role, keeps their invitation.
    accept(&app, "kept@example.org", &my_token)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn suspending_the_inviter_revokes_and_reinstating_them_does_not_revive() {
    let app = TestApp::new().await;
    let (ada, ada_token) = app
        .add_member("ada@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let (id, token) = invite(&app, &ada_token, "new@example.org", "administrator").await;
    change_membership(&app, ada, json!({"status": "suspended"})).await;
    change_membership(&app, ada, json!({"status": "active"})).await;
    assert_revoked_for(
        &revocations(&app, id).await,
        Some(app.owner_membership_id),
        "inviter_suspended",
    );
    assert!(listed(&app).await.is_empty());
    assert_unavailable(&accept(&app, "new@example.org", &token).await);
}

#[tokio::test]
async fn demotion_revokes_only_what_the_new_role_could_not_invite() {
    let app = TestApp::new().await;
    let (co_owner, co_token) = app
        .add_member("co@example.org", Role::Owner, Some("Co Owner"))
        .await;
    let (owner_invite, owner_token) = invite(&app, &co_token, "o@example.org", "owner").await;
    let (admin_invite, admin_token) =
        invite(&app, &co_token, "a@example.org", "administrator").await;
    let (ada, ada_token) = app
        .add_member("ada@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let (member_invite, member_token) = invite(&app, &ada_token, "m@example.org", "member").await;

    // An owner made an administrator may no longer invite an owner, but
    // still invites administrators.
    change_membership(&app, co_owner, json!({"role": "administrator"})).await;
    assert_revoked_for(
        &revocations(&app, owner_invite).await,
        Some(app.owner_membership_id),
        "inviter_demoted",
    );
    assert!(revocations(&app, admin_invite).await.is_empty());
    assert_unavailable(&accept(&app, "o@example.org", &owner_token).await);
    accept(&app, "a@example.org", &admin_token)
        .await
        .assert_status(200);

    // A change that keeps the role keeps the invitations; a member invites nobody.
    change_membership(&app, ada, json!({"adult_review": true})).await;
    assert_eq!(listed(&app).await.len(), 2, "the accepted one and Ada's");
    change_membership(&app, ada, json!({"role": "member"})).await;
    assert_revoked_for(
        &revocations(&app, member_invite).await,
        Some(app.owner_membership_id),
        "inviter_demoted",
    );
    assert_unavailable(&accept(&app, "m@example.org", &member_token).await);
}

/// `pillbox member <command> --data-dir <the app's> --household <id> --email <email> <more>`,
/// run while the app (the server) has the database open.
fn member_command(app: &TestApp, command: &str, email: &str, more: &[&str]) {
    let household = app.household_id.to_string();
    let mut args = vec![
        "member",
        command,
        "--data-dir",
        app.dir.path().to_str().unwrap(),
        "--household",
        &household,
        "--email",
        email,
    ];
    args.extend_from_slice(more);
    crate::support::process::run(crate::support::process::pillbox(&args), None).assert_success();
}

#[tokio::test]
async fn the_host_operator_removing_or_demoting_the_inviter_revokes_too() {
    let app = TestApp::new().await;
    let (_, ada_token) = app
        .add_member("ada@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let (_, bob_token) = app
        .add_member("bob@example.org", Role::Administrator, Some("Bob Admin"))
        .await;
    let (adas, ada_invited) = invite(&app, &ada_token, "a@example.org", "member").await;
    let (bobs, bob_invited) = invite(&app, &bob_token, "b@example.org", "member").await;

    member_command(&app, "role", "ada@example.org", &["--role", "member"]);
    member_command(&app, "remove", "bob@example.org", &[]);
    assert_revoked_for(&revocations(&app, adas).await, None, "inviter_demoted");
    assert_revoked_for(&revocations(&app, bobs).await, None, "inviter_removed");
    assert_unavailable(&accept(&app, "a@example.org", &ada_invited).await);
    assert_unavailable(&accept(&app, "b@example.org", &bob_invited).await);
}

#[tokio::test]
async fn an_invitation_whose_inviter_lost_their_role_earlier_is_unavailable() {
    // As a database from before this rule may hold: the inviter was demoted
    // while the invitation stayed pending.
    let app = TestApp::new().await;
    let (ada, ada_token) = app
        .add_member("ada@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let (_, token) = invite(&app, &ada_token, "new@example.org", "member").await;
    app.db
        .write(move |tx| {
            Ok(tx.execute(
                "UPDATE memberships SET role = 'member' WHERE id = ?1",
                [ada],
            )?)
        })
        .await
        .unwrap();
    open(&app, &token).await.assert_status(404);
    assert_unavailable(&accept(&app, "new@example.org", &token).await);
}

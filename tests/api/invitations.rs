//! Invitations through the real Router (issue 13): create, list, revoke,
//! resend and accept with a signed-in session of the invited email.

use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::invitations::{session_for, signed_in, token_of};
use crate::support::sign_in::tokens;

fn invitation(email: &str, person: Value) -> Value {
    let mut body = json!({
        "email": email,
        "role": "member",
        "inventory_management": true,
    });
    for (k, v) in person.as_object().unwrap() {
        body[k] = v.clone();
    }
    json!({ "household_invitation": body })
}

async fn invite(app: &TestApp, email: &str) -> (i64, String) {
    let r = app
        .post(
            &app.hh("/admin/invitations"),
            &app.owner,
            invitation(
                email,
                json!({"person": {"name": "Someone New", "date_of_birth": "1990-01-01"}}),
            ),
        )
        .await;
    r.assert_status(201);
    (r.id(), token_of(r.data()))
}

async fn accept(app: &TestApp, credential: &str, token: &str) -> crate::support::TestResponse {
    app.post(
        "/api/v1/invitations/accept",
        credential,
        json!({ "token": token }),
    )
    .await
}

#[tokio::test]
async fn an_invitation_is_accepted_once_into_person_membership_and_grants() {
    let app = TestApp::new().await;
    let kid = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "Kit", "date_of_birth": "2018-03-04"}}),
        )
        .await;
    kid.assert_status(201);
    let kid_id = kid.id();

    let created = app
        .post(
            &app.hh("/admin/invitations"),
            &app.owner,
            invitation(
                "Partner@Example.org",
                json!({
                    "person": {"name": "Pat Partner", "date_of_birth": "1985-04-02"},
                    "person_access_grants": [
                        {"person_id": kid_id, "access_level": "view", "relationship_type": "parent"}
                    ],
                }),
            ),
        )
        .await;
    created.assert_status(201);
    assert_eq!(created.data()["delivery"], "link");
    assert_eq!(created.data()["status"], "pending");
    assert_eq!(created.data()["email"], "partner@example.org");
    let token = token_of(created.data());
    // pbx_inv_<selector>_<secret>; the base64url secret may itself hold '_'.
    let secret = token.splitn(4, '_').nth(3).unwrap().to_string();
    let expires = created.data()["expires_at"].as_str().unwrap();
    let days = jiff::Timestamp::now()
        .until(expires.parse::<jiff::Timestamp>().unwrap())
        .unwrap()
        .get_seconds()
        / 86_400;
    assert_eq!(days, 6, "seven days less the moments since: {expires}");

    // The list never shows the token.
    let listed = app.get(&app.hh("/admin/invitations"), &app.owner).await;
    listed.assert_status(200);
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert!(!listed.body.to_string().contains(&secret));
    let stored: i64 = app
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT count(*) FROM invitations WHERE CAST(secret_sha256 AS TEXT) LIKE '%' || ?1 || '%'",
                [secret],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(stored, 0, "the secret itself is not stored");

    // An app token never accepts, even a household owner's.
    accept(&app, &app.owner, &token).await.assert_status(403);
    // Another account's session: unavailable.
    let stranger = session_for(&app, "stranger@example.org").await;
    accept(&app, &stranger, &token)
        .await
        .assert_error(422, "invitation_unavailable");
    // Nobody signed in.
    app.post("/api/v1/invitations/accept", "", json!({"token": token}))
        .await
        .assert_status(401);

    let partner = session_for(&app, "partner@example.org").await;
    let first = accept(&app, &partner, &token).await;
    first.assert_status(200);
    let membership_id = first.data()["membership_id"].as_i64().unwrap();
    let person_id = first.data()["person_id"].as_i64().unwrap();
    assert_eq!(first.data()["household_id"], app.household_id);

    // Membership with the invited role and flags, linked to the new person.
    let members = app.get(&app.hh("/admin/memberships"), &app.owner).await;
    let member = members
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == membership_id)
        .expect("the new membership")
        .clone();
    assert_eq!(member["role"], "member");
    assert_eq!(member["status"], "active");
    assert_eq!(member["person_id"], person_id);
    assert_eq!(member["permissions"]["inventory_management"], true);
    let person = app
        .get(&app.hh(&format!("/people/{person_id}")), &partner)
        .await;
    person.assert_status(200);
    assert_eq!(person.data()["name"], "Pat Partner");
    assert_eq!(person.data()["date_of_birth"], "1985-04-02");
    let grants = app
        .get(
            &app.hh(&format!(
                "/admin/person_access_grants?membership_id={membership_id}"
            )),
            &app.owner,
        )
        .await;
    let grants = grants.data().as_array().unwrap().clone();
    assert_eq!(grants.len(), 2, "{grants:?}");
    let on_kid = grants.iter().find(|g| g["person_id"] == kid_id).unwrap();
    assert_eq!(on_kid["access_level"], "view");
    assert_eq!(on_kid["relationship_type"], "parent");
    assert!(
        grants
            .iter()
            .any(|g| g["person_id"] == person_id && g["relationship_type"] == "self")
    );
    // The household is now among the account's.
    let households = app.get("/api/v1/auth/households", &partner).await;
    assert!(
        households
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == app.household_id)
    );

    // A retry returns the same membership and does not bring back a revoked grant.
    let kid_grant = on_kid["id"].as_i64().unwrap();
    app.delete(
        &app.hh(&format!("/admin/person_access_grants/{kid_grant}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let again = accept(&app, &partner, &token).await;
    again.assert_status(200);
    assert_eq!(again.data()["membership_id"], membership_id);
    let grants = app
        .get(
            &app.hh(&format!(
                "/admin/person_access_grants?membership_id={membership_id}"
            )),
            &app.owner,
        )
        .await;
    assert_eq!(grants.data().as_array().unwrap().len(), 1);
    let listed = app.get(&app.hh("/admin/invitations"), &app.owner).await;
    assert_eq!(listed.data()[0]["status"], "accepted");
    assert_eq!(listed.data()[0]["accepted_membership_id"], membership_id);

    // Once the membership is removed, the old link is no way back in.
    app.delete(
        &app.hh(&format!("/admin/memberships/{membership_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    accept(&app, &partner, &token)
        .await
        .assert_error(422, "invitation_unavailable");

    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    let kinds: Vec<&str> = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .collect();
    for kind in ["invitation.created", "invitation.accepted"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
}

#[tokio::test]
async fn expired_revoked_and_already_member_invitations_are_unavailable() {
    let app = TestApp::new().await;

    let (expired_id, expired) = invite(&app, "late@example.org").await;
    app.db
        .write(move |tx| {
            tx.execute(
                "UPDATE invitations SET expires_at = '2020-01-01T00:00:00Z' WHERE id = ?1",
                [expired_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let late = session_for(&app, "late@example.org").await;
    accept(&app, &late, &expired)
        .await
        .assert_error(422, "invitation_unavailable");
    let listed = app.get(&app.hh("/admin/invitations"), &app.owner).await;
    assert_eq!(listed.data()[0]["status"], "expired");

    let (revoked_id, revoked) = invite(&app, "gone@example.org").await;
    app.delete(
        &app.hh(&format!("/admin/invitations/{revoked_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.delete(
        &app.hh(&format!("/admin/invitations/{revoked_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(404);
    let gone = session_for(&app, "gone@example.org").await;
    accept(&app, &gone, &revoked)
        .await
        .assert_error(422, "invitation_unavailable");

    let (_, twice) = invite(&app, "already@example.org").await;
    app.add_member("already@example.org", Role::Member, Some("Al Ready"))
        .await;
    let already = signed_in(&app, "already@example.org").await;
    accept(&app, &already, &twice)
        .await
        .assert_error(422, "invitation_unavailable");

    // A made-up or mangled token says the same.
    accept(&app, &already, "pbx_inv_0123456789abcdef_nope")
        .await
        .assert_error(422, "invitation_unavailable");
    accept(&app, &already, "not a token")
        .await
        .assert_error(422, "invitation_unavailable");

    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    assert!(
        audit
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event_type"] == "invitation.revoked")
    );
}

#[tokio::test]
async fn only_administrators_invite_and_bad_invitations_change_nothing() {
    let app = TestApp::new().await;
    let (_, member) = app
        .add_member("member@example.org", Role::Member, Some("Mo Member"))
        .await;
    let (_, admin) = app
        .add_member("admin@example.org", Role::Administrator, Some("Ada Admin"))
        .await;
    let body = invitation(
        "new@example.org",
        json!({"person": {"name": "Nu", "date_of_birth": "1990-01-01"}}),
    );
    app.post(&app.hh("/admin/invitations"), &member, body.clone())
        .await
        .assert_error(403, "forbidden");
    app.get(&app.hh("/admin/invitations"), &member)
        .await
        .assert_error(403, "forbidden");
    let mut owner_invite = body.clone();
    owner_invite["household_invitation"]["role"] = json!("owner");
    app.post(&app.hh("/admin/invitations"), &admin, owner_invite)
        .await
        .assert_error(403, "forbidden");

    let both = invitation(
        "new@example.org",
        json!({"person": {"name": "Nu", "date_of_birth": "1990-01-01"}, "person_id": 1}),
    );
    let r = app.post(&app.hh("/admin/invitations"), &admin, both).await;
    r.assert_error(422, "validation_failed");
    assert!(r.body["error"]["errors"]["person"].is_array());
    let bad_email = invitation(
        "secret-value-not-an-email",
        json!({"person": {"name": "Nu", "date_of_birth": "1990-01-01"}}),
    );
    let r = app
        .post(&app.hh("/admin/invitations"), &admin, bad_email)
        .await;
    r.assert_error(422, "validation_failed");
    assert!(r.body["error"]["errors"]["email"].is_array());
    assert!(!r.body.to_string().contains("secret-value"));
    let minor_adult = invitation(
        "new@example.org",
        json!({"person": {"name": "Nu", "date_of_birth": "2020-01-01", "person_type": "adult"}}),
    );
    let r = app
        .post(&app.hh("/admin/invitations"), &admin, minor_adult)
        .await;
    r.assert_error(422, "validation_failed");
    assert!(
        r.body["error"]["errors"]["person.person_type"].is_array(),
        "{}",
        r.body
    );
    let member_email = invitation(
        "Member@example.org",
        json!({"person": {"name": "Nu", "date_of_birth": "1990-01-01"}}),
    );
    app.post(&app.hh("/admin/invitations"), &admin, member_email)
        .await
        .assert_error(422, "validation_failed");
    let unknown_person = invitation("new@example.org", json!({"person_id": 99_999}));
    app.post(&app.hh("/admin/invitations"), &admin, unknown_person)
        .await
        .assert_error(404, "not_found");

    let listed = app.get(&app.hh("/admin/invitations"), &admin).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 0);

    // An existing, unlinked person is linked on acceptance.
    let kid = app
        .post(
            &app.hh("/people"),
            &admin,
            json!({"person": {"name": "Grandad", "date_of_birth": "1950-01-01"}}),
        )
        .await;
    let link = invitation("grandad@example.org", json!({"person_id": kid.id()}));
    let created = app.post(&app.hh("/admin/invitations"), &admin, link).await;
    created.assert_status(201);
    let grandad = session_for(&app, "grandad@example.org").await;
    let accepted = accept(&app, &grandad, &token_of(created.data())).await;
    accepted.assert_status(200);
    assert_eq!(accepted.data()["person_id"], kid.id());
}

#[tokio::test]
async fn resend_needs_a_user_session_and_email_delivery() {
    let app = TestApp::new().await;
    let caps = app
        .send(
            axum::http::Method::GET,
            "/api/v1/capabilities",
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(caps.data()["administration"]["invitation_email"], false);
    let (id, token) = invite(&app, "later@example.org").await;
    let path = app.hh(&format!("/admin/invitations/{id}/resend"));
    app.post(&path, &app.owner, json!({}))
        .await
        .assert_error(403, "forbidden");
    let (owner_session, _) = tokens(&app).await;
    app.post(&path, &owner_session, json!({}))
        .await
        .assert_error(409, "email_delivery_unavailable");
    // Nothing changed: the old link still works.
    let later = session_for(&app, "later@example.org").await;
    accept(&app, &later, &token).await.assert_status(200);
}

/// An SMTP server the test starts (mailin, a real SMTP implementation) that
/// keeps every message it receives.
#[derive(Clone, Default)]
pub struct Sink {
    pub messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    current: Vec<u8>,
}

impl mailin_embedded::Handler for Sink {
    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.current.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> mailin_embedded::Response {
        let text = String::from_utf8_lossy(&std::mem::take(&mut self.current)).into_owned();
        self.messages.lock().unwrap().push(text);
        mailin_embedded::response::OK
    }
}

fn start_sink(listener: std::net::TcpListener) -> Sink {
    let sink = Sink::default();
    let mut server = mailin_embedded::Server::new(sink.clone());
    server.with_tcp_listener(listener).with_num_threads(2);
    std::thread::spawn(move || {
        let _ = server.serve();
    });
    sink
}

/// The invitation token in a received message (quoted-printable or not).
fn token_in(message: &str) -> String {
    let plain = message.replace("=\r\n", "").replace("=3D", "=");
    let start = plain.find("pbx_inv_").expect("a token in the email");
    plain[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect()
}

pub async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn invitation_mail_waits_in_the_outbox_across_a_restart_and_is_delivered_once() {
    // The sink's port, reserved and then closed: the mail server is down.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let mail = pillbox::mail::MailSettings {
        smtp_url: format!("smtp://127.0.0.1:{port}"),
        from: "Pillbox <pillbox@example.org>".into(),
        ca_file: None,
    };
    let app = TestApp::with_settings(pillbox::config::Settings {
        rate_limit_per_minute: 0,
        mail: Some(mail.clone()),
        ..pillbox::config::Settings::default()
    })
    .await;
    let caps = app
        .send(
            axum::http::Method::GET,
            "/api/v1/capabilities",
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(caps.data()["administration"]["invitation_email"], true);
    assert_eq!(caps.data()["administration"]["invitations"], true);

    let first_run = pillbox::mail::start(app.db.clone(), mail.clone()).unwrap();
    let created = app
        .post(
            &app.hh("/admin/invitations"),
            &app.owner,
            invitation(
                "mailed@example.org",
                json!({"person": {"name": "Mae Mailed", "date_of_birth": "1990-01-01"}}),
            ),
        )
        .await;
    created.assert_status(201);
    assert_eq!(created.data()["delivery"], "queued");
    assert!(created.data()["accept_url"].is_null());
    let attempts = || async {
        app.db
            .read(|c| {
                Ok(c.query_row(
                    "SELECT attempts, sent_at IS NOT NULL FROM mail_outbox",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?)),
                )?)
            })
            .await
            .unwrap()
    };
    wait_for("a failed attempt", async || attempts().await.0 >= 1).await;
    assert!(!attempts().await.1);
    // The server stops; the mail server comes back; the server starts again.
    drop(first_run);
    let sink = start_sink(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap());
    let _second_run = pillbox::mail::start(app.db.clone(), mail.clone()).unwrap();
    wait_for("delivery", async || attempts().await.1).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let messages = sink.messages.lock().unwrap().clone();
    assert_eq!(messages.len(), 1, "delivered once");
    assert!(messages[0].contains("mailed@example.org"));
    assert!(messages[0].contains("text/plain") && messages[0].contains("text/html"));
    let first_token = token_in(&messages[0]);

    // A resend rotates the token, queues it and never shows it.
    let (owner_session, _) = tokens(&app).await;
    let id = created.id();
    let resent = app
        .post(
            &app.hh(&format!("/admin/invitations/{id}/resend")),
            &owner_session,
            json!({}),
        )
        .await;
    resent.assert_status(200);
    assert_eq!(resent.data()["delivery"], "queued");
    assert!(!resent.body.to_string().contains("pbx_inv_"));
    wait_for("the resent mail", async || {
        sink.messages.lock().unwrap().len() == 2
    })
    .await;
    let second_token = token_in(&sink.messages.lock().unwrap()[1]);
    assert_ne!(first_token, second_token);

    let mailed = session_for(&app, "mailed@example.org").await;
    accept(&app, &mailed, &first_token)
        .await
        .assert_error(422, "invitation_unavailable");
    accept(&app, &mailed, &second_token)
        .await
        .assert_status(200);
    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    assert!(
        audit
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event_type"] == "invitation.resent")
    );
}

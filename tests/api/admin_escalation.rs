//! Nothing an administrator does leads to the owner role: app tokens are
//! minted only for one's own membership, an owner's tokens, grants and
//! membership are out of an administrator's reach, and the audit log names
//! the member who acted.

use axum::http::Method;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;

async fn memberships(app: &TestApp) -> Vec<Value> {
    let list = app
        .get(&app.hh("/admin/memberships?per_page=100"), &app.owner)
        .await;
    list.assert_status(200);
    list.data().as_array().unwrap().clone()
}

async fn live_tokens(app: &TestApp) -> Vec<Value> {
    let list = app
        .get(&app.hh("/admin/app_tokens?per_page=100"), &app.owner)
        .await;
    list.assert_status(200);
    list.data().as_array().unwrap().clone()
}

async fn audit_log(app: &TestApp) -> Vec<Value> {
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    log.assert_status(200);
    log.data().as_array().unwrap().clone()
}

#[tokio::test]
async fn an_administrator_cannot_mint_a_token_for_the_owner() {
    let app = TestApp::new().await;
    let (admin_id, admin) = app
        .add_member("admin@example.org", Role::Administrator, Some("Ada"))
        .await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let tokens_before = live_tokens(&app).await.len();
    for target in [app.owner_membership_id, member_id] {
        app.post(
            &app.hh("/admin/app_tokens"),
            &admin,
            json!({"api_app_token": {"name": "x", "membership_id": target}}),
        )
        .await
        .assert_error(403, "forbidden");
    }
    assert_eq!(live_tokens(&app).await.len(), tokens_before);

    // The caller's own membership, named or left out, is fine.
    for body in [
        json!({"api_app_token": {"name": "mine", "membership_id": admin_id}}),
        json!({"api_app_token": {"name": "mine too"}}),
    ] {
        let created = app.post(&app.hh("/admin/app_tokens"), &admin, body).await;
        created.assert_status(201);
        assert_eq!(created.data()["membership_id"], admin_id);
        assert_eq!(created.data()["created_by_membership_id"], admin_id);
        let token = created.data()["token"].as_str().unwrap().to_string();
        let me = app.get(&app.hh("/me"), &token).await;
        me.assert_status(200);
        assert_eq!(me.data()["membership"]["id"], admin_id);
        assert_eq!(me.data()["membership"]["role"], "administrator");
    }
    // An owner is held to the same rule.
    app.post(
        &app.hh("/admin/app_tokens"),
        &app.owner,
        json!({"api_app_token": {"name": "x", "membership_id": admin_id}}),
    )
    .await
    .assert_error(403, "forbidden");
}

#[tokio::test]
async fn token_revocation_follows_rank() {
    let app = TestApp::new().await;
    let (admin_id, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    let (other_admin_id, other_admin) = app
        .add_member("admin2@example.org", Role::Administrator, None)
        .await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let token_of = |tokens: &[Value], membership: i64| -> i64 {
        tokens
            .iter()
            .find(|t| t["membership_id"] == membership)
            .and_then(|t| t["id"].as_i64())
            .expect("a live token of the membership")
    };
    let tokens = live_tokens(&app).await;
    let owner_token = token_of(&tokens, app.owner_membership_id);

    // An administrator never revokes an owner's token.
    app.delete(
        &app.hh(&format!("/admin/app_tokens/{owner_token}")),
        &admin,
        None,
    )
    .await
    .assert_error(403, "forbidden");
    app.get(&app.hh("/me"), &app.owner).await.assert_status(200);

    // It does revoke the tokens of members and administrators.
    for (id, token) in [(member_id, &member), (other_admin_id, &other_admin)] {
        app.delete(
            &app.hh(&format!("/admin/app_tokens/{}", token_of(&tokens, id))),
            &admin,
            None,
        )
        .await
        .assert_status(204);
        app.get(&app.hh("/me"), token)
            .await
            .assert_error(401, "unauthorized");
    }
    // The owner revokes anyone's, the administrator's included.
    app.delete(
        &app.hh(&format!(
            "/admin/app_tokens/{}",
            token_of(&tokens, admin_id)
        )),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&app.hh("/me"), &admin)
        .await
        .assert_error(401, "unauthorized");

    let revocations: Vec<Value> = audit_log(&app)
        .await
        .into_iter()
        .filter(|e| e["event_type"] == "app_token.revoked")
        .collect();
    let actors: Vec<&Value> = revocations
        .iter()
        .map(|e| &e["actor_membership_id"])
        .collect();
    assert_eq!(
        actors,
        [
            &json!(app.owner_membership_id),
            &json!(admin_id),
            &json!(admin_id)
        ]
    );
}

/// Every administrative operation, sent by an administrator at the owner
/// (or at the owner role), is refused and leaves the owner where they were;
/// the audit log names only the members who really acted.
#[tokio::test]
async fn no_administrator_path_leads_to_the_owner_role() {
    let app = TestApp::new().await;
    let (admin_id, admin) = app
        .add_member("admin@example.org", Role::Administrator, Some("Ada"))
        .await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, Some("Mo"))
        .await;
    let owner_before = memberships(&app)
        .await
        .into_iter()
        .find(|m| m["id"] == app.owner_membership_id)
        .unwrap();
    let owner_person = owner_before["person_id"].as_i64().unwrap();
    let owner_token = live_tokens(&app)
        .await
        .into_iter()
        .find(|t| t["membership_id"] == app.owner_membership_id)
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let grants = app
        .get(
            &app.hh(&format!(
                "/admin/person_access_grants?membership_id={}",
                app.owner_membership_id
            )),
            &app.owner,
        )
        .await;
    grants.assert_status(200);
    let owner_grant = grants.data()[0]["id"].as_i64().unwrap();
    let audit_before = audit_log(&app).await.len();

    let owner_path = format!("/admin/memberships/{}", app.owner_membership_id);
    let full = |role: &str, person: Value| {
        json!({"household_membership": {
            "role": role, "status": "active", "person_id": person,
            "inventory_management": true, "location_management": true, "adult_review": true,
        }})
    };
    let attempts: Vec<(Method, String, Option<Value>)> = vec![
        // Tokens acting as the owner.
        (
            Method::POST,
            "/admin/app_tokens".into(),
            Some(json!({"api_app_token": {"name": "x", "membership_id": app.owner_membership_id}})),
        ),
        (
            Method::DELETE,
            format!("/admin/app_tokens/{owner_token}"),
            None,
        ),
        // The owner's membership, field by field and whole.
        (
            Method::PATCH,
            owner_path.clone(),
            Some(json!({"household_membership": {"role": "administrator"}})),
        ),
        (
            Method::PATCH,
            owner_path.clone(),
            Some(json!({"household_membership": {"status": "suspended"}})),
        ),
        (
            Method::PATCH,
            owner_path.clone(),
            Some(json!({"household_membership": {"person_id": null}})),
        ),
        (
            Method::PATCH,
            owner_path.clone(),
            Some(json!({"household_membership": {"inventory_management": false}})),
        ),
        (
            Method::PUT,
            owner_path.clone(),
            Some(full("member", json!(owner_person))),
        ),
        (Method::DELETE, owner_path.clone(), None),
        // The owner role for the administrator or anyone else.
        (
            Method::PATCH,
            format!("/admin/memberships/{admin_id}"),
            Some(json!({"household_membership": {"role": "owner"}})),
        ),
        (
            Method::PUT,
            format!("/admin/memberships/{admin_id}"),
            Some(full("owner", Value::Null)),
        ),
        (
            Method::PATCH,
            format!("/admin/memberships/{member_id}"),
            Some(json!({"household_membership": {"role": "owner"}})),
        ),
        // The owner's access grants.
        (
            Method::POST,
            "/admin/person_access_grants".into(),
            Some(json!({"person_access_grant": {
                "membership_id": app.owner_membership_id, "person_id": owner_person,
                "access_level": "view", "relationship_type": "carer"}})),
        ),
        (
            Method::DELETE,
            format!("/admin/person_access_grants/{owner_grant}"),
            None,
        ),
    ];
    for (method, path, body) in attempts {
        let response = app
            .send(method.clone(), &app.hh(&path), Some(&admin), body, &[])
            .await;
        assert_eq!(
            response.status.as_u16(),
            403,
            "{method} {path} as an administrator: {}",
            response.body
        );
    }

    // The owner is untouched and still the only owner; its token works.
    let after = memberships(&app).await;
    let owner_after = after
        .iter()
        .find(|m| m["id"] == app.owner_membership_id)
        .unwrap();
    assert_eq!(owner_after, &owner_before);
    let owners: Vec<&Value> = after.iter().filter(|m| m["role"] == "owner").collect();
    assert_eq!(owners.len(), 1);
    let me = app.get(&app.hh("/me"), &app.owner).await;
    me.assert_status(200);
    assert_eq!(me.data()["membership"]["role"], "owner");
    assert_eq!(
        app.get(&app.hh("/me"), &admin).await.data()["membership"]["role"],
        "administrator"
    );
    // Refused attempts leave no audit event behind.
    assert_eq!(audit_log(&app).await.len(), audit_before);

    // What the administrator may do is audited under its own membership.
    app.patch(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &admin,
        json!({"household_membership": {"role": "administrator"}}),
        None,
    )
    .await
    .assert_status(200);
    app.post(
        &app.hh("/admin/app_tokens"),
        &admin,
        json!({"api_app_token": {"name": "mine"}}),
    )
    .await
    .assert_status(201);
    let log = audit_log(&app).await;
    for event in &log[..2] {
        assert_eq!(event["actor_membership_id"], admin_id, "{event}");
    }
}

/// Tokens minted for another member under the old rule stop working when
/// the database is brought forward.
#[tokio::test]
async fn tokens_once_minted_for_another_member_are_revoked_on_upgrade() {
    use pillbox::db::{DATABASE_FILE, Db};
    use pillbox::household::app_tokens::{self, TokenRequest};
    use pillbox::household::{self, NewMember};

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (owner, admin) = db
        .write(|conn| {
            let set_up = household::set_up(
                conn,
                "Old household",
                "UTC",
                &NewMember {
                    email: "owner@example.org",
                    password_hash: crate::support::password_hash(),
                    person_name: "Olive",
                    role: Role::Owner,
                },
            )?;
            let admin = household::add_member(
                conn,
                set_up.household_id,
                &NewMember {
                    email: "admin@example.org",
                    password_hash: crate::support::password_hash(),
                    person_name: "Adam Admin",
                    role: Role::Administrator,
                },
            )?;
            let issue = |membership_id, issued_by| {
                app_tokens::issue(
                    conn,
                    &TokenRequest {
                        household_id: set_up.household_id,
                        membership_id,
                        name: "t",
                        max_age_days: None,
                        issued_by,
                    },
                )
                .map(|t| t.app_token.id)
            };
            // As the old rule allowed: the administrator minted one for the owner.
            let minted = issue(set_up.membership_id, None)?;
            conn.execute(
                "UPDATE app_tokens SET created_by_membership_id = ?1 WHERE id = ?2",
                [admin, minted],
            )?;
            issue(admin, Some(admin))?;
            issue(set_up.membership_id, None)?;
            Ok((set_up.membership_id, admin))
        })
        .await
        .unwrap();
    db.close().await;
    let file = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    // Version 2: the schema as it was before migration 3 repaired access.
    file.pragma_update(None, "user_version", 2).unwrap();
    drop(file);

    let db = Db::open(dir.path()).unwrap();
    let live: Vec<(i64, Option<i64>)> = db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT membership_id, created_by_membership_id FROM app_tokens
                 WHERE revoked_at IS NULL ORDER BY id",
            )?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    assert_eq!(live, [(admin, Some(admin)), (owner, None)]);
}

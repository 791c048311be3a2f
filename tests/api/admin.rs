//! Household administration: settings, memberships, person access grants
//! and the audit log. Only owners and administrators.

use axum::http::Method;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse};

fn errors_of(response: &TestResponse) -> Vec<String> {
    response.body["error"]["errors"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The membership with this id, as the owner sees it in listMemberships.
async fn membership(app: &TestApp, id: i64) -> Value {
    let list = app
        .get(&app.hh("/admin/memberships?per_page=100"), &app.owner)
        .await;
    list.assert_status(200);
    list.data()
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

/// A whole membership for a PUT, with no permission flags.
fn whole_membership(role: &str, person_id: Value) -> Value {
    json!({"household_membership": {
        "role": role, "status": "active", "person_id": person_id,
        "inventory_management": false, "location_management": false, "adult_review": false,
    }})
}

async fn create_person(app: &TestApp, name: &str) -> (i64, String) {
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": name, "date_of_birth": "1990-05-01"}}),
        )
        .await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
    )
}

fn grant(membership_id: i64, person_id: Value, level: &str) -> Value {
    json!({"person_access_grant": {
        "membership_id": membership_id,
        "person_id": person_id,
        "access_level": level,
        "relationship_type": "carer",
    }})
}

async fn audit_types(app: &TestApp) -> Vec<(String, Value)> {
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    log.assert_status(200);
    log.data()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event_type"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

// ---------------------------------------------------------------- settings

#[tokio::test]
async fn settings_get_patch_and_put() {
    let app = TestApp::new().await;
    let path = app.hh("/admin/settings");
    let got = app.get(&path, &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.data()["id"], app.household_id);
    assert_eq!(got.data()["name"], "Test household");
    assert_eq!(got.data()["time_zone"], "Europe/London");
    assert_eq!(got.data()["app_token_max_age_days"], 90);
    let etag = got.etag();

    let patched = app
        .patch(
            &path,
            &app.owner,
            json!({"household": {"name": "  The Smiths  ", "app_token_max_age_days": 30}}),
            Some(&etag),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["name"], "The Smiths");
    assert_eq!(patched.data()["app_token_max_age_days"], 30);
    assert_eq!(patched.data()["time_zone"], "Europe/London");
    assert_ne!(patched.etag(), etag);
    let fresh = patched.etag();
    assert_eq!(app.get(&path, &app.owner).await.etag(), fresh);

    // The new maximum age applies to new tokens at once.
    app.post(
        &app.hh("/admin/app_tokens"),
        &app.owner,
        json!({"api_app_token": {"name": "long", "max_age_days": 31}}),
    )
    .await
    .assert_error(422, "validation_failed");

    // A stale If-Match: 409 and nothing changes.
    for method in [Method::PATCH, Method::PUT] {
        let body = json!({"household": {"name": "Stale", "time_zone": "UTC", "app_token_max_age_days": 30}});
        let stale = app
            .send(
                method,
                &path,
                Some(&app.owner),
                Some(body),
                &[("if-match", etag.as_str())],
            )
            .await;
        stale.assert_error(409, "edit_conflict");
    }
    let unchanged = app.get(&path, &app.owner).await;
    assert_eq!(unchanged.data()["name"], "The Smiths");
    assert_eq!(unchanged.etag(), fresh);

    // PUT replaces: every setting is required, none falls back to a default.
    let missing = app
        .put(&path, &app.owner, json!({"household": {}}), None)
        .await;
    missing.assert_error(422, "validation_failed");
    assert_eq!(
        errors_of(&missing),
        ["app_token_max_age_days", "name", "time_zone"]
    );
    let partial = app
        .put(
            &path,
            &app.owner,
            json!({"household": {"name": "Home", "time_zone": "America/New_York"}}),
            Some(&fresh),
        )
        .await;
    partial.assert_error(422, "validation_failed");
    assert_eq!(errors_of(&partial), ["app_token_max_age_days"]);
    assert_eq!(app.get(&path, &app.owner).await.etag(), fresh);
    let put = app
        .put(
            &path,
            &app.owner,
            json!({"household": {"name": "Home", "time_zone": "America/New_York", "app_token_max_age_days": 90}}),
            Some(&fresh),
        )
        .await;
    put.assert_status(200);
    assert_eq!(put.data()["name"], "Home");
    assert_eq!(put.data()["time_zone"], "America/New_York");
    assert_eq!(put.data()["app_token_max_age_days"], 90);

    // A PATCH that changes nothing keeps the version.
    let same = app
        .patch(
            &path,
            &app.owner,
            json!({"household": {"name": "Home"}}),
            None,
        )
        .await;
    same.assert_status(200);
    assert_eq!(same.etag(), put.etag());
}

#[tokio::test]
async fn settings_validation_names_fields() {
    let app = TestApp::new().await;
    let path = app.hh("/admin/settings");
    let cases = [
        (json!({"household": {"colour": "red"}}), "colour"),
        (
            json!({"household": {"time_zone": "Mars/Olympus"}}),
            "time_zone",
        ),
        (json!({"household": {"name": "   "}}), "name"),
        (json!({"household": {"name": "x".repeat(201)}}), "name"),
        (json!({"household": {"name": null}}), "name"),
        (
            json!({"household": {"app_token_max_age_days": 0}}),
            "app_token_max_age_days",
        ),
        (
            json!({"household": {"app_token_max_age_days": 3651}}),
            "app_token_max_age_days",
        ),
        (
            json!({"household": {"app_token_max_age_days": "90"}}),
            "app_token_max_age_days",
        ),
        (json!({"name": "Unwrapped"}), "name"),
    ];
    for (body, field) in cases {
        let r = app.patch(&path, &app.owner, body.clone(), None).await;
        r.assert_error(422, "validation_failed");
        assert!(
            errors_of(&r).contains(&field.to_string()),
            "{body} should name {field}: {}",
            r.body
        );
    }
    let r = app
        .put(
            &path,
            &app.owner,
            json!({"household": {"name": "A", "time_zone": "UTC", "app_token_max_age_days": 9, "extra": 1}}),
            None,
        )
        .await;
    r.assert_error(422, "validation_failed");
    assert_eq!(errors_of(&r), ["extra"]);
    // Nothing changed.
    let got = app.get(&path, &app.owner).await;
    assert_eq!(got.data()["name"], "Test household");
}

// ------------------------------------------------------------- permissions

#[tokio::test]
async fn administration_is_for_owners_and_administrators_only() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Mo Member"))
        .await;
    let (_, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    let (person_id, _) = create_person(&app, "Pat").await;

    let settings = app.hh("/admin/settings");
    let memberships = app.hh("/admin/memberships");
    let one_membership = app.hh(&format!("/admin/memberships/{}", app.owner_membership_id));
    let grants = app.hh("/admin/person_access_grants");
    let audit = app.hh("/admin/audit_logs");
    let calls: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, settings.clone(), None),
        (
            Method::PATCH,
            settings.clone(),
            Some(json!({"household": {"name": "Mine"}})),
        ),
        (
            Method::PUT,
            settings.clone(),
            Some(
                json!({"household": {"name": "Mine", "time_zone": "UTC", "app_token_max_age_days": 30}}),
            ),
        ),
        (Method::GET, memberships.clone(), None),
        (
            Method::PATCH,
            app.hh(&format!("/admin/memberships/{member_id}")),
            Some(json!({"household_membership": {"role": "administrator"}})),
        ),
        (
            Method::PUT,
            one_membership.clone(),
            Some(whole_membership("member", Value::Null)),
        ),
        (Method::DELETE, one_membership.clone(), None),
        (Method::GET, grants.clone(), None),
        (
            Method::POST,
            grants.clone(),
            Some(grant(member_id, json!(person_id), "manage")),
        ),
        (
            Method::DELETE,
            app.hh("/admin/person_access_grants/1"),
            None,
        ),
        (Method::GET, audit.clone(), None),
    ];
    for (method, path, body) in &calls {
        let r = app
            .send(method.clone(), path, Some(&member), body.clone(), &[])
            .await;
        r.assert_error(403, "forbidden");
        let r = app
            .send(method.clone(), path, None, body.clone(), &[])
            .await;
        r.assert_error(401, "unauthorized");
    }
    // The member's attempts changed nothing.
    let me = membership(&app, member_id).await;
    assert_eq!(me["role"], "member");
    assert_eq!(
        app.get(&settings, &app.owner).await.data()["name"],
        "Test household"
    );

    // An administrator may read and administer.
    for path in [&settings, &memberships, &grants, &audit] {
        app.get(path, &admin).await.assert_status(200);
    }

    // Bad pagination is a 422 naming the parameter on every list.
    for path in [&memberships, &grants, &audit] {
        for query in ["?page=0", "?per_page=101", "?per_page=x"] {
            let r = app.get(&format!("{path}{query}"), &app.owner).await;
            r.assert_error(422, "validation_failed");
            assert_eq!(errors_of(&r).len(), 1, "{path}{query}: {}", r.body);
        }
    }
}

// ------------------------------------------------------------- memberships

#[tokio::test]
async fn memberships_list_update_replace_and_delete() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Mo Member"))
        .await;
    let (pat_id, pat_portable) = create_person(&app, "Pat").await;

    let list = app.get(&app.hh("/admin/memberships"), &app.owner).await;
    list.assert_status(200);
    assert_eq!(
        list.body["meta"],
        json!({"page": 1, "per_page": 20, "total_count": 2})
    );
    let owner = &list.data()[0];
    assert_eq!(owner["id"], app.owner_membership_id);
    assert_eq!(owner["email"], "owner@example.org");
    assert_eq!(owner["role"], "owner");
    assert_eq!(owner["status"], "active");
    assert_eq!(owner["household_id"], app.household_id);
    let owner_person = owner["person_id"].as_i64().expect("owner's own person");
    assert!(owner["person_portable_id"].is_string());
    let paged = app
        .get(&app.hh("/admin/memberships?page=2&per_page=1"), &app.owner)
        .await;
    paged.assert_status(200);
    assert_eq!(paged.data().as_array().unwrap().len(), 1);
    assert_eq!(paged.data()[0]["id"], member_id);

    let before = membership(&app, member_id).await;
    assert_eq!(
        before["permissions"],
        json!({"inventory_management": false, "location_management": false, "adult_review": false})
    );
    let path = app.hh(&format!("/admin/memberships/{member_id}"));

    let patched = app
        .patch(
            &path,
            &app.owner,
            json!({"household_membership": {"inventory_management": true, "role": "administrator"}}),
            None,
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["role"], "administrator");
    assert_eq!(patched.data()["permissions"]["inventory_management"], true);
    assert_eq!(patched.data()["person_id"], before["person_id"]);
    assert_eq!(
        patched.data()["permissions_version"].as_i64().unwrap(),
        before["permissions_version"].as_i64().unwrap() + 1
    );
    // The new role applies to the member's very next request.
    app.get(&app.hh("/admin/memberships"), &member)
        .await
        .assert_status(200);

    // PUT replaces: every attribute is required; a missing person_id never
    // silently unlinks the member's person.
    let missing = app
        .put(&path, &app.owner, json!({"household_membership": {}}), None)
        .await;
    missing.assert_error(422, "validation_failed");
    assert_eq!(
        errors_of(&missing),
        [
            "adult_review",
            "inventory_management",
            "location_management",
            "person_id",
            "role",
            "status"
        ]
    );
    let without_person = app
        .put(
            &path,
            &app.owner,
            json!({"household_membership": {"role": "member", "status": "active",
                "inventory_management": false, "location_management": false, "adult_review": true}}),
            None,
        )
        .await;
    without_person.assert_error(422, "validation_failed");
    assert_eq!(errors_of(&without_person), ["person_id"]);
    assert_eq!(membership(&app, member_id).await, patched.data().clone());
    let put = app
        .put(
            &path,
            &app.owner,
            json!({"household_membership": {"role": "member", "status": "active", "person_id": pat_id,
                "inventory_management": false, "location_management": false, "adult_review": true}}),
            None,
        )
        .await;
    put.assert_status(200);
    assert_eq!(put.data()["role"], "member");
    assert_eq!(put.data()["status"], "active");
    assert_eq!(put.data()["person_id"], pat_id);
    assert_eq!(put.data()["person_portable_id"], pat_portable.as_str());
    assert_eq!(
        put.data()["permissions"],
        json!({"inventory_management": false, "location_management": false, "adult_review": true})
    );
    app.get(&app.hh("/admin/memberships"), &member)
        .await
        .assert_error(403, "forbidden");

    // Validation names the field; nothing changes.
    let cases = [
        (json!({"household_membership": {"colour": "red"}}), "colour"),
        (json!({"household_membership": {"role": "emperor"}}), "role"),
        (json!({"household_membership": {"role": null}}), "role"),
        (
            json!({"household_membership": {"status": "revoked"}}),
            "status",
        ),
        // The owner's own person is already linked to the owner.
        (
            json!({"household_membership": {"person_id": owner_person}}),
            "person_id",
        ),
        (
            json!({"household_membership": {"adult_review": "yes"}}),
            "adult_review",
        ),
    ];
    let unknown_person = json!({"household_membership": {"person_id": 999_999}});
    app.patch(&path, &app.owner, unknown_person, None)
        .await
        .assert_error(404, "not_found");
    for (body, field) in cases {
        let r = app.patch(&path, &app.owner, body.clone(), None).await;
        r.assert_error(422, "validation_failed");
        assert!(
            errors_of(&r).contains(&field.to_string()),
            "{body} should name {field}: {}",
            r.body
        );
    }
    assert_eq!(membership(&app, member_id).await, put.data().clone());

    // person_id may be unlinked with null.
    let unlinked = app
        .patch(
            &path,
            &app.owner,
            json!({"household_membership": {"person_id": null}}),
            None,
        )
        .await;
    unlinked.assert_status(200);
    assert_eq!(unlinked.data()["person_id"], Value::Null);
    assert_eq!(unlinked.data()["person_portable_id"], Value::Null);

    // Unknown and non-numeric ids.
    app.patch(
        &app.hh("/admin/memberships/999999"),
        &app.owner,
        json!({"household_membership": {"adult_review": true}}),
        None,
    )
    .await
    .assert_error(404, "not_found");

    // Delete: 204, then gone from the list, 404 on every later change, token dead.
    app.delete(&path, &app.owner, None).await.assert_status(204);
    let list = app.get(&app.hh("/admin/memberships"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
    assert_eq!(membership(&app, member_id).await, Value::Null);
    app.delete(&path, &app.owner, None)
        .await
        .assert_error(404, "not_found");
    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"status": "active"}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    app.get(&app.hh("/people"), &member)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn the_last_owner_stays() {
    let app = TestApp::new().await;
    let own = app.hh(&format!("/admin/memberships/{}", app.owner_membership_id));
    for body in [
        json!({"household_membership": {"role": "administrator"}}),
        json!({"household_membership": {"status": "suspended"}}),
    ] {
        app.patch(&own, &app.owner, body, None)
            .await
            .assert_error(409, "last_owner");
    }
    app.put(
        &own,
        &app.owner,
        whole_membership("member", Value::Null),
        None,
    )
    .await
    .assert_error(409, "last_owner");
    app.delete(&own, &app.owner, None)
        .await
        .assert_error(409, "last_owner");
    let owner = membership(&app, app.owner_membership_id).await;
    assert_eq!(owner["role"], "owner");
    assert_eq!(owner["status"], "active");

    // With a second active owner, the first may step down.
    let (second_id, second) = app
        .add_member("second@example.org", Role::Administrator, None)
        .await;
    app.patch(
        &app.hh(&format!("/admin/memberships/{second_id}")),
        &app.owner,
        json!({"household_membership": {"role": "owner"}}),
        None,
    )
    .await
    .assert_status(200);
    let demoted = app
        .patch(
            &own,
            &app.owner,
            json!({"household_membership": {"role": "administrator"}}),
            None,
        )
        .await;
    demoted.assert_status(200);
    assert_eq!(demoted.data()["role"], "administrator");
    // Now the second owner is the last one, and cannot leave.
    app.delete(
        &app.hh(&format!("/admin/memberships/{second_id}")),
        &second,
        None,
    )
    .await
    .assert_error(409, "last_owner");
}

#[tokio::test]
async fn an_administrator_cannot_touch_an_owner() {
    let app = TestApp::new().await;
    let (admin_id, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let owner = app.hh(&format!("/admin/memberships/{}", app.owner_membership_id));
    app.patch(
        &owner,
        &admin,
        json!({"household_membership": {"adult_review": true}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    app.put(&owner, &admin, whole_membership("owner", Value::Null), None)
        .await
        .assert_error(403, "forbidden");
    app.delete(&owner, &admin, None)
        .await
        .assert_error(403, "forbidden");
    // Nor hand out the owner role, to others or to itself.
    for id in [member_id, admin_id] {
        app.patch(
            &app.hh(&format!("/admin/memberships/{id}")),
            &admin,
            json!({"household_membership": {"role": "owner"}}),
            None,
        )
        .await
        .assert_error(403, "forbidden");
    }
    let owner_now = membership(&app, app.owner_membership_id).await;
    assert_eq!(owner_now["permissions"]["adult_review"], false);
    assert_eq!(membership(&app, member_id).await["role"], "member");

    // It may administer members.
    let promoted = app
        .patch(
            &app.hh(&format!("/admin/memberships/{member_id}")),
            &admin,
            json!({"household_membership": {"role": "administrator", "location_management": true}}),
            None,
        )
        .await;
    promoted.assert_status(200);
    app.delete(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &admin,
        None,
    )
    .await
    .assert_status(204);
}

#[tokio::test]
async fn a_suspended_membership_stops_its_tokens_at_once() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Mo"))
        .await;
    app.get(&app.hh("/people"), &member)
        .await
        .assert_status(200);
    let path = app.hh(&format!("/admin/memberships/{member_id}"));
    let suspended = app
        .patch(
            &path,
            &app.owner,
            json!({"household_membership": {"status": "suspended"}}),
            None,
        )
        .await;
    suspended.assert_status(200);
    assert_eq!(suspended.data()["status"], "suspended");
    app.get(&app.hh("/people"), &member)
        .await
        .assert_error(401, "unauthorized");
    app.get("/api/v1/auth/households", &member)
        .await
        .assert_error(401, "unauthorized");
    // Still listed, and reactivation brings the same token back.
    assert_eq!(membership(&app, member_id).await["status"], "suspended");
    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"status": "active"}}),
        None,
    )
    .await
    .assert_status(200);
    app.get(&app.hh("/people"), &member)
        .await
        .assert_status(200);
}

// ---------------------------------------------------------- access grants

#[tokio::test]
async fn grants_give_and_take_access_at_once() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let (pat_id, pat_portable) = create_person(&app, "Pat").await;
    let pat = app.hh(&format!("/people/{pat_id}"));
    app.get(&pat, &member).await.assert_error(404, "not_found");
    let version_before = membership(&app, member_id).await["permissions_version"]
        .as_i64()
        .unwrap();

    let created = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, json!(pat_portable), "view"),
        )
        .await;
    created.assert_status(201);
    let g = created.data().clone();
    assert_eq!(g["membership_id"], member_id);
    assert_eq!(g["person_id"], pat_id);
    assert_eq!(g["person_portable_id"], pat_portable.as_str());
    assert_eq!(g["access_level"], "view");
    assert_eq!(g["relationship_type"], "carer");
    assert_eq!(g["expires_at"], Value::Null);
    assert_eq!(g["created_by_membership_id"], app.owner_membership_id);
    let grant_id = created.id();
    assert_eq!(
        membership(&app, member_id).await["permissions_version"],
        version_before + 1
    );

    // The member sees the person at once, but may not change them.
    app.get(&pat, &member).await.assert_status(200);
    let people = app.get(&app.hh("/people"), &member).await;
    assert_eq!(people.body["meta"]["total_count"], 1);
    app.patch(&pat, &member, json!({"person": {"name": "Patricia"}}), None)
        .await
        .assert_error(403, "forbidden");

    // One live grant per member and person.
    let duplicate = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, json!(pat_id), "manage"),
        )
        .await;
    duplicate.assert_error(409, "grant_exists");

    // Listing, with filters.
    let (other_id, _) = create_person(&app, "Other").await;
    app.post(
        &app.hh("/admin/person_access_grants"),
        &app.owner,
        grant(member_id, json!(other_id.to_string()), "record"),
    )
    .await
    .assert_status(201);
    let all = app
        .get(&app.hh("/admin/person_access_grants"), &app.owner)
        .await;
    all.assert_status(200);
    // The owner's own `self` grant from set-up plus the two new ones.
    assert_eq!(all.body["meta"]["total_count"], 3);
    let by_member = app
        .get(
            &app.hh(&format!(
                "/admin/person_access_grants?membership_id={member_id}"
            )),
            &app.owner,
        )
        .await;
    assert_eq!(by_member.body["meta"]["total_count"], 2);
    for person in [pat_id.to_string(), pat_portable.clone()] {
        let by_person = app
            .get(
                &app.hh(&format!("/admin/person_access_grants?person_id={person}")),
                &app.owner,
            )
            .await;
        by_person.assert_status(200);
        assert_eq!(by_person.body["meta"]["total_count"], 1);
        assert_eq!(by_person.data()[0]["id"], grant_id);
    }
    for query in ["membership_id=0", "membership_id=abc", "person_id=nobody"] {
        let r = app
            .get(
                &app.hh(&format!("/admin/person_access_grants?{query}")),
                &app.owner,
            )
            .await;
        r.assert_error(422, "validation_failed");
        let field = query.split('=').next().unwrap();
        assert_eq!(errors_of(&r), [field]);
    }

    // Deleting the grant removes access at once.
    let version_before = membership(&app, member_id).await["permissions_version"]
        .as_i64()
        .unwrap();
    app.delete(
        &app.hh(&format!("/admin/person_access_grants/{grant_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&pat, &member).await.assert_error(404, "not_found");
    assert_eq!(
        membership(&app, member_id).await["permissions_version"],
        version_before + 1
    );
    app.delete(
        &app.hh(&format!("/admin/person_access_grants/{grant_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_error(404, "not_found");
    let by_person = app
        .get(
            &app.hh(&format!("/admin/person_access_grants?person_id={pat_id}")),
            &app.owner,
        )
        .await;
    assert_eq!(by_person.body["meta"]["total_count"], 0);

    // A new grant may be given once the old one is revoked.
    app.post(
        &app.hh("/admin/person_access_grants"),
        &app.owner,
        grant(member_id, json!(pat_id), "manage"),
    )
    .await
    .assert_status(201);
    app.patch(&pat, &member, json!({"person": {"name": "Patricia"}}), None)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn grant_creation_validates_and_names_fields() {
    let app = TestApp::new().await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let (gone_id, _) = app.add_member("gone@example.org", Role::Member, None).await;
    app.delete(
        &app.hh(&format!("/admin/memberships/{gone_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let (pat_id, _) = create_person(&app, "Pat").await;
    let path = app.hh("/admin/person_access_grants");
    let with = |patch: Value| {
        let mut body = grant(member_id, json!(pat_id), "view");
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() && k != "expires_at" {
                body["person_access_grant"]
                    .as_object_mut()
                    .unwrap()
                    .remove(k);
            } else {
                body["person_access_grant"][k] = v.clone();
            }
        }
        body
    };
    // References that name nothing in this household are "not found".
    for (body, what) in [
        (
            with(json!({"membership_id": 999_999})),
            "membership not found",
        ),
        (
            with(json!({"membership_id": gone_id})),
            "membership not found",
        ),
        (with(json!({"person_id": 999_999})), "person not found"),
        (
            with(json!({"person_id": "0192a5b0-0000-7000-8000-000000000000"})),
            "person not found",
        ),
    ] {
        let r = app.post(&path, &app.owner, body.clone()).await;
        r.assert_error(404, "not_found");
        assert_eq!(r.body["error"]["message"], what, "{body}");
    }
    let cases = [
        (with(json!({"colour": "red"})), vec!["colour"]),
        (with(json!({"membership_id": null})), vec!["membership_id"]),
        (with(json!({"person_id": "someone"})), vec!["person_id"]),
        (with(json!({"person_id": null})), vec!["person_id"]),
        (with(json!({"access_level": "admin"})), vec!["access_level"]),
        (
            with(json!({"relationship_type": "neighbour"})),
            vec!["relationship_type"],
        ),
        (
            with(json!({"expires_at": "2000-01-01T00:00:00Z"})),
            vec!["expires_at"],
        ),
        (with(json!({"expires_at": "tomorrow"})), vec!["expires_at"]),
    ];
    for (body, fields) in cases {
        let r = app.post(&path, &app.owner, body.clone()).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(errors_of(&r), fields, "{body}: {}", r.body);
    }
    let list = app.get(&path, &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1, "only the owner's own");

    // A future expiry is kept; expires_at null means no expiry.
    let later = app
        .post(
            &path,
            &app.owner,
            with(json!({"expires_at": "2999-01-01T12:00:00+01:00"})),
        )
        .await;
    later.assert_status(201);
    assert_eq!(later.data()["expires_at"], "2999-01-01T11:00:00.000000Z");
}

// -------------------------------------------------------------- audit log

#[tokio::test]
async fn the_audit_log_lists_security_events_newest_first() {
    let app = TestApp::new().await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let (pat_id, _) = create_person(&app, "Pat").await;

    let token = app
        .post(
            &app.hh("/admin/app_tokens"),
            &app.owner,
            json!({"api_app_token": {"name": "integration"}}),
        )
        .await;
    token.assert_status(201);
    let token_id = token.id();
    app.delete(
        &app.hh(&format!("/admin/app_tokens/{token_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let g = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, json!(pat_id), "record"),
        )
        .await;
    g.assert_status(201);
    let grant_id = g.id();
    app.delete(
        &app.hh(&format!("/admin/person_access_grants/{grant_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.patch(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &app.owner,
        json!({"household_membership": {"adult_review": true, "role": "member"}}),
        None,
    )
    .await
    .assert_status(200);
    app.patch(
        &app.hh("/admin/settings"),
        &app.owner,
        json!({"household": {"name": "Test household", "time_zone": "UTC"}}),
        None,
    )
    .await
    .assert_status(200);
    app.delete(
        &app.hh(&format!("/admin/memberships/{member_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);

    let events = audit_types(&app).await;
    let newest: Vec<&str> = events.iter().take(7).map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        newest,
        [
            "membership.revoked",
            "household.settings_updated",
            "membership.updated",
            "person_access_grant.revoked",
            "person_access_grant.created",
            "app_token.revoked",
            "app_token.created",
        ]
    );
    let ids: Vec<i64> = events
        .iter()
        .map(|(_, e)| e["id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let event = |i: usize| &events[i].1;
    for (_, e) in events.iter().take(7) {
        assert_eq!(e["actor_membership_id"], app.owner_membership_id);
    }
    // Only the changed fields are listed.
    assert_eq!(event(1)["metadata"], json!({"changed": ["time_zone"]}));
    assert_eq!(event(1)["subject_type"], "household");
    assert_eq!(event(1)["subject_id"], app.household_id);
    assert_eq!(event(2)["metadata"], json!({"changed": ["adult_review"]}));
    assert_eq!(event(2)["subject_id"], member_id);
    assert_eq!(event(0)["metadata"]["revoked_app_tokens"], 1);
    assert_eq!(event(3)["subject_id"], grant_id);
    assert_eq!(event(3)["metadata"]["membership_id"], member_id);
    assert_eq!(event(4)["metadata"]["access_level"], "record");
    assert_eq!(event(5)["subject_type"], "app_token");
    assert_eq!(event(5)["subject_id"], token_id);
    // The owner's membership made by set-up, and tokens issued from the
    // command line, have no acting member.
    let (_, set_up) = events.last().unwrap();
    assert_eq!(set_up["event_type"], "membership.created");
    assert_eq!(set_up["actor_membership_id"], Value::Null);
    assert_eq!(set_up["metadata"]["via"], "cli");
    let (_, cli) = &events[events.len() - 2];
    assert_eq!(cli["event_type"], "app_token.created");
    assert_eq!(cli["actor_membership_id"], Value::Null);
    assert_eq!(cli["metadata"]["via"], "cli");

    // Paginated.
    let page = app
        .get(&app.hh("/admin/audit_logs?page=2&per_page=2"), &app.owner)
        .await;
    page.assert_status(200);
    assert_eq!(page.body["meta"]["total_count"], events.len());
    assert_eq!(page.data()[0]["id"], event(2)["id"]);
}

/// The settings' name limit and token age range are the ones the rule
/// enforces, in the request and response schemas alike.
#[tokio::test]
async fn settings_limits_are_documented_from_the_rule() {
    use pillbox::household::MAX_TOKEN_AGE_DAYS;
    let app = TestApp::new().await;
    let schemas = &app.document()["components"]["schemas"];
    for schema in [
        &schemas["HouseholdSettingsAttributes"],
        &schemas["HouseholdSettings"],
    ] {
        assert_eq!(schema["properties"]["name"]["maxLength"], 200);
        let days = &schema["properties"]["app_token_max_age_days"];
        assert_eq!(days["maximum"], MAX_TOKEN_AGE_DAYS);
        assert_eq!(days["minimum"], 1);
    }
    let refused = app
        .patch(
            &app.hh("/admin/settings"),
            &app.owner,
            json!({"household": {"app_token_max_age_days": MAX_TOKEN_AGE_DAYS + 1}}),
            None,
        )
        .await;
    refused.assert_status(422);
    assert_eq!(
        refused.body["error"]["errors"]["app_token_max_age_days"],
        json!([format!("must be an integer from 1 to {MAX_TOKEN_AGE_DAYS}")])
    );
}

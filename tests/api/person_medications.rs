use std::collections::BTreeSet;

use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::records::{Ids, feed, grant, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

const KEYS: [&str; 21] = [
    "id",
    "portable_id",
    "person_id",
    "person_portable_id",
    "medication_id",
    "medication_portable_id",
    "source_dosage_option_id",
    "source_dosage_option_portable_id",
    "dose_amount",
    "dose_unit",
    "dose_cycle",
    "max_daily_doses",
    "min_hours_between_doses",
    "administration_kind",
    "active",
    "notes",
    "position",
    "retired_at",
    "current_pause_period",
    "created_at",
    "updated_at",
];

fn assign(person_id: Value, medication_id: Value) -> Value {
    json!({"person_medication": {"person_id": person_id, "medication_id": medication_id}})
}

/// A whole assignment for a PUT: `fields` over a routine assignment with
/// a dose of one tablet a day and every other attribute left empty.
fn whole_assignment(fields: Value) -> Value {
    let mut attributes = json!({
        "medication_id": null, "source_dosage_option_id": null, "dose_amount": "1",
        "dose_unit": "tablet", "dose_cycle": "daily", "max_daily_doses": null,
        "min_hours_between_doses": null, "administration_kind": "routine", "notes": null,
    });
    for (key, value) in fields.as_object().unwrap() {
        attributes[key] = value.clone();
    }
    json!({"person_medication": attributes})
}

fn fields(body: &Value) -> Vec<String> {
    body["error"]["errors"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

async fn create(app: &TestApp, person: &Ids, medication: &Ids) -> TestResponse {
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            assign(json!(person.id), json!(medication.id)),
        )
        .await;
    created.assert_status(201);
    created
}

/// (id, position) of a person's live assignments, in list order.
async fn order(app: &TestApp, person: &Ids) -> Vec<(i64, i64)> {
    let list = app
        .get(
            &app.hh(&format!(
                "/person_medications?person_id={}",
                person.portable
            )),
            &app.owner,
        )
        .await;
    list.assert_status(200);
    list.data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].as_i64().unwrap(), a["position"].as_i64().unwrap()))
        .collect()
}

async fn reorder(app: &TestApp, id: i64, direction: &str, token: &str) -> TestResponse {
    app.patch(
        &app.hh(&format!("/person_medications/{id}/reorder")),
        token,
        json!({"direction": direction}),
        None,
    )
    .await
}

#[tokio::test]
async fn create_read_update_replace_and_retire_an_assignment() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;

    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.portable, "medication_id": med.portable,
                   "notes": "with food", "max_daily_doses": 4}}),
        )
        .await;
    created.assert_status(201);
    let a = created.data().clone();
    let keys: BTreeSet<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, KEYS.into_iter().collect());
    assert_eq!(a["person_id"], ada.id);
    assert_eq!(a["medication_id"], med.id);
    assert_eq!(a["dose_amount"], "1");
    assert_eq!(a["dose_unit"], "tablet");
    assert_eq!(a["dose_cycle"], "daily");
    assert_eq!(a["administration_kind"], "routine");
    assert_eq!(a["active"], true);
    assert_eq!(a["position"], 1);
    assert_eq!(a["current_pause_period"], Value::Null);
    let ids = Ids {
        id: created.id(),
        portable: a["portable_id"].as_str().unwrap().to_string(),
    };

    for id in [ids.id.to_string(), ids.portable.clone()] {
        let got = app
            .get(&app.hh(&format!("/person_medications/{id}")), &app.owner)
            .await;
        got.assert_status(200);
        assert_eq!(got.etag(), created.etag());
        assert_eq!(got.data(), &a);
    }

    let patched = app
        .patch(
            &app.hh(&format!("/person_medications/{}", ids.portable)),
            &app.owner,
            json!({"person_medication": {"administration_kind": "as_needed",
                   "min_hours_between_doses": "4", "person_id": ada.portable}}),
            Some(&created.etag()),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["administration_kind"], "as_needed");
    assert_eq!(patched.data()["min_hours_between_doses"], "4");
    assert_eq!(patched.data()["notes"], "with food");

    app.patch(
        &app.hh(&format!("/person_medications/{}", ids.id)),
        &app.owner,
        json!({"person_medication": {"notes": "changed"}}),
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    let unchanged = app
        .get(
            &app.hh(&format!("/person_medications/{}", ids.id)),
            &app.owner,
        )
        .await;
    assert_eq!(unchanged.data()["notes"], "with food");
    assert_eq!(unchanged.etag(), patched.etag());

    let replaced = app
        .put(
            &app.hh(&format!("/person_medications/{}", ids.id)),
            &app.owner,
            whole_assignment(json!({"medication_id": med.id, "dose_amount": "2"})),
            Some(&patched.etag()),
        )
        .await;
    replaced.assert_status(200);
    let r = replaced.data();
    assert_eq!(r["dose_amount"], "2");
    assert_eq!(r["administration_kind"], "routine");
    assert_eq!(r["notes"], Value::Null);
    assert_eq!(r["max_daily_doses"], Value::Null);
    assert_eq!(r["min_hours_between_doses"], Value::Null);
    assert_eq!(r["position"], 1);

    // Attributes are checked; the person cannot change.
    let bob = new_person(&app, "Bob").await;
    for (field, value) in [
        ("person_id", json!(bob.id)),
        ("administration_kind", json!("sometimes")),
        ("administration_kind", Value::Null),
        ("dose_amount", json!(2)),
        ("dose_amount", json!("0")),
        ("min_hours_between_doses", json!("-2")),
        ("position", json!(5)),
        ("frequency", json!("daily")),
        ("notes", json!("x".repeat(2001))),
    ] {
        let refused = app
            .patch(
                &app.hh(&format!("/person_medications/{}", ids.id)),
                &app.owner,
                json!({"person_medication": {field: value}}),
                None,
            )
            .await;
        refused.assert_error(422, "validation_failed");
        assert_eq!(fields(&refused.body), [field], "{field}={value}");
    }

    app.delete(
        &app.hh(&format!("/person_medications/{}", ids.portable)),
        &app.owner,
        Some(&replaced.etag()),
    )
    .await
    .assert_status(204);
    for id in [ids.id.to_string(), ids.portable.clone()] {
        let path = app.hh(&format!("/person_medications/{id}"));
        app.get(&path, &app.owner)
            .await
            .assert_error(404, "not_found");
        app.patch(
            &path,
            &app.owner,
            json!({"person_medication": {"notes": "x"}}),
            None,
        )
        .await
        .assert_error(404, "not_found");
        app.delete(&path, &app.owner, None)
            .await
            .assert_error(404, "not_found");
        reorder(&app, ids.id, "up", &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    let list = app.get(&app.hh("/person_medications"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 0);
    let person = Some(ada.id);
    let expected: Vec<(String, Option<i64>)> = ["create", "update", "update", "update", "delete"]
        .into_iter()
        .map(|a| (a.to_string(), person))
        .collect();
    assert_eq!(feed(&app, "PersonMedication", ids.id).await, expected);

    // A new assignment goes after every earlier one, retired ones included.
    let next = create(&app, &ada, &med).await;
    assert_eq!(next.data()["position"], 2);
}

#[tokio::test]
async fn an_assignment_starts_from_a_dosage_option() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Calpol").await;
    let option = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            json!({"dosage_option": {"medication_id": med.id, "amount": "5", "unit": "ml",
                "default_max_daily_doses": 4, "default_min_hours_between_doses": "4",
                "default_dose_cycle": "weekly"}}),
        )
        .await;
    option.assert_status(201);
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
                "source_dosage_option_id": option.data()["portable_id"],
                "administration_kind": "as_needed", "dose_unit": "ml", "dose_amount": "2.5"}}),
        )
        .await;
    created.assert_status(201);
    let a = created.data();
    assert_eq!(a["source_dosage_option_id"], option.id());
    assert_eq!(a["dose_amount"], "2.5");
    assert_eq!(a["dose_unit"], "ml");
    assert_eq!(a["max_daily_doses"], 4);
    assert_eq!(a["min_hours_between_doses"], "4");
    assert_eq!(a["dose_cycle"], "weekly");
    assert_eq!(a["administration_kind"], "as_needed");
}

#[tokio::test]
async fn reorder_swaps_with_the_neighbour_and_keeps_positions_unique() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let bob = new_person(&app, "Bob").await;
    let med = new_medication(&app, "Paracetamol").await;
    let first = create(&app, &ada, &med).await.id();
    let bobs = create(&app, &bob, &med).await;
    let second = create(&app, &ada, &med).await.id();
    let third = create(&app, &ada, &med).await.id();
    assert_eq!(bobs.data()["position"], 1, "positions count per person");
    assert_eq!(
        order(&app, &ada).await,
        [(first, 1), (second, 2), (third, 3)]
    );

    let before = app
        .get(
            &app.hh(&format!("/person_medications/{second}")),
            &app.owner,
        )
        .await;
    let moved = reorder(&app, third, "up", &app.owner).await;
    moved.assert_status(200);
    assert_eq!(moved.data()["position"], 2);
    assert_eq!(
        order(&app, &ada).await,
        [(first, 1), (third, 2), (second, 3)]
    );
    // Both rows changed version.
    let after = app
        .get(
            &app.hh(&format!("/person_medications/{second}")),
            &app.owner,
        )
        .await;
    assert_ne!(after.etag(), before.etag());
    assert_eq!(after.data()["position"], 3);

    // No-ops at the ends: 200, unchanged.
    let top = app
        .get(&app.hh(&format!("/person_medications/{first}")), &app.owner)
        .await;
    let noop = reorder(&app, first, "up", &app.owner).await;
    noop.assert_status(200);
    assert_eq!(noop.etag(), top.etag());
    assert_eq!(noop.data(), top.data());
    let noop = reorder(&app, second, "down", &app.owner).await;
    noop.assert_status(200);
    assert_eq!(noop.etag(), after.etag());

    // Moving down from the top, then past a retired assignment.
    reorder(&app, first, "down", &app.owner)
        .await
        .assert_status(200);
    assert_eq!(
        order(&app, &ada).await,
        [(third, 1), (first, 2), (second, 3)]
    );
    app.delete(
        &app.hh(&format!("/person_medications/{first}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let moved = reorder(&app, second, "up", &app.owner).await;
    moved.assert_status(200);
    assert_eq!(moved.data()["position"], 1);
    assert_eq!(order(&app, &ada).await, [(second, 1), (third, 3)]);
    let fourth = create(&app, &ada, &med).await;
    assert_eq!(fourth.data()["position"], 4);
    assert_eq!(order(&app, &bob).await, [(bobs.id(), 1)]);

    // The list orders by person, then position.
    let all = app.get(&app.hh("/person_medications"), &app.owner).await;
    let listed: Vec<(i64, i64)> = all
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["person_id"].as_i64().unwrap(),
                a["position"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [(ada.id, 1), (ada.id, 3), (ada.id, 4), (bob.id, 1)]);

    // Each swap is two updates in the change feed.
    let updates =
        |entries: Vec<(String, Option<i64>)>| entries.iter().filter(|(a, _)| a == "update").count();
    assert_eq!(updates(feed(&app, "PersonMedication", second).await), 2);

    // A bad direction, a stale ETag.
    let refused = reorder(&app, second, "sideways", &app.owner).await;
    refused.assert_error(422, "validation_failed");
    app.patch(
        &app.hh(&format!("/person_medications/{second}/reorder")),
        &app.owner,
        json!({"direction": "down"}),
        Some(&after.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    assert_eq!(order(&app, &ada).await[0], (second, 1));
}

#[tokio::test]
async fn writes_need_manage_access_to_the_person() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let created = create(&app, &ada, &med).await;
    create(&app, &ada, &med).await;
    let path = app.hh(&format!("/person_medications/{}", created.id()));
    let (membership, member) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    let patch = json!({"person_medication": {"notes": "with water"}});
    let put = whole_assignment(
        json!({"medication_id": med.id, "dose_amount": "2", "administration_kind": "routine"}),
    );

    app.get(&path, &member).await.assert_error(404, "not_found");
    let list = app.get(&app.hh("/person_medications"), &member).await;
    assert_eq!(list.body["meta"]["total_count"], 0);
    app.post(
        &app.hh("/person_medications"),
        &member,
        assign(json!(ada.id), json!(med.id)),
    )
    .await
    .assert_error(404, "not_found");
    app.patch(&path, &member, patch.clone(), None)
        .await
        .assert_error(404, "not_found");
    reorder(&app, created.id(), "down", &member)
        .await
        .assert_error(404, "not_found");
    app.delete(&path, &member, None)
        .await
        .assert_error(404, "not_found");

    for level in ["view", "record"] {
        grant(&app, membership, ada.id, level).await;
        app.get(&path, &member).await.assert_status(200);
        let list = app.get(&app.hh("/person_medications"), &member).await;
        assert_eq!(list.body["meta"]["total_count"], 2, "{level}");
        app.post(
            &app.hh("/person_medications"),
            &member,
            assign(json!(ada.id), json!(med.id)),
        )
        .await
        .assert_error(403, "forbidden");
        app.patch(&path, &member, patch.clone(), None)
            .await
            .assert_error(403, "forbidden");
        app.put(&path, &member, put.clone(), None)
            .await
            .assert_error(403, "forbidden");
        reorder(&app, created.id(), "down", &member)
            .await
            .assert_error(403, "forbidden");
        app.delete(&path, &member, None)
            .await
            .assert_error(403, "forbidden");
    }
    let unchanged = app.get(&path, &app.owner).await;
    assert_eq!(unchanged.etag(), created.etag());

    grant(&app, membership, ada.id, "manage").await;
    app.post(
        &app.hh("/person_medications"),
        &member,
        assign(json!(ada.portable), json!(med.portable)),
    )
    .await
    .assert_status(201);
    app.patch(&path, &member, patch, None)
        .await
        .assert_status(200);
    app.put(&path, &member, put, None).await.assert_status(200);
    let moved = reorder(&app, created.id(), "down", &member).await;
    moved.assert_status(200);
    assert_eq!(moved.data()["position"], 2);
    app.delete(&path, &member, None).await.assert_status(204);
}

/// A PUT with only `notes` once reset an as-needed assignment to routine:
/// a replace must carry every attribute, and a missing one changes nothing.
#[tokio::test]
async fn a_replace_missing_attributes_is_refused_not_reset() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let created = create(&app, &ada, &med).await;
    let path = app.hh(&format!("/person_medications/{}", created.id()));
    let as_needed = app
        .patch(
            &path,
            &app.owner,
            json!({"person_medication": {"administration_kind": "as_needed"}}),
            None,
        )
        .await;
    as_needed.assert_status(200);

    let refused = app
        .put(
            &path,
            &app.owner,
            json!({"person_medication": {"notes": "after food"}}),
            None,
        )
        .await;
    refused.assert_error(422, "validation_failed");
    let named = fields(&refused.body);
    for field in [
        "medication_id",
        "source_dosage_option_id",
        "dose_amount",
        "dose_unit",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "administration_kind",
    ] {
        assert!(named.contains(&field.to_string()), "{field}: {named:?}");
    }
    assert!(!named.contains(&"notes".to_string()));
    let got = app.get(&path, &app.owner).await;
    assert_eq!(got.etag(), as_needed.etag());
    assert_eq!(got.data()["administration_kind"], "as_needed");

    let mut whole = whole_assignment(json!({"medication_id": med.id, "notes": "after food"}));
    whole["person_medication"]["administration_kind"] = json!("as_needed");
    let replaced = app.put(&path, &app.owner, whole, None).await;
    replaced.assert_status(200);
    assert_eq!(replaced.data()["administration_kind"], "as_needed");
    assert_eq!(replaced.data()["notes"], "after food");
}

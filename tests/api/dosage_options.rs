use std::collections::BTreeSet;

use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::records::{paracetamol, stock_keeper};
use crate::support::{TestApp, TestResponse};

/// A whole dosage option for a PUT: `fields` over every attribute left empty.
fn whole_option(fields: Value) -> Value {
    let mut attributes = json!({
        "amount": null, "unit": null, "frequency": null, "description": null,
        "default_for_adults": false, "default_for_children": false,
        "default_max_daily_doses": null, "default_min_hours_between_doses": null,
        "default_dose_cycle": null, "current_supply": null, "reorder_threshold": null,
    });
    for (key, value) in fields.as_object().unwrap() {
        attributes[key] = value.clone();
    }
    json!({"dosage_option": attributes})
}

const KEYS: [&str; 21] = [
    "id",
    "portable_id",
    "medication_id",
    "medication_portable_id",
    "amount",
    "unit",
    "frequency",
    "description",
    "default_for_adults",
    "default_for_children",
    "default_max_daily_doses",
    "default_min_hours_between_doses",
    "default_dose_cycle",
    "current_supply",
    "reorder_threshold",
    "low_stock",
    "out_of_stock",
    "days_until_low_stock",
    "days_until_out_of_stock",
    "created_at",
    "updated_at",
];

/// Creates a medication through the API: (numeric id, portable id).
async fn medication(app: &TestApp) -> (i64, String) {
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    let portable = created.data()["portable_id"].as_str().unwrap().to_string();
    (created.id(), portable)
}

fn option(medication_id: Value, extra: Value) -> Value {
    let mut attrs = json!({"medication_id": medication_id, "amount": "1", "unit": "tablet"});
    for (k, v) in extra.as_object().unwrap() {
        attrs[k] = v.clone();
    }
    json!({ "dosage_option": attrs })
}

/// The change-feed entries of one dosage option, oldest first.
async fn feed(app: &TestApp, id: i64) -> Vec<String> {
    app.db
        .read(move |c| {
            let mut stmt = c.prepare(
                "SELECT action FROM change_feed
                 WHERE record_type = 'MedicationDosageOption' AND record_id = ?1 AND person_id IS NULL
                 ORDER BY seq",
            )?;
            let actions = stmt
                .query_map([id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(actions)
        })
        .await
        .unwrap()
}

#[track_caller]
fn assert_invalid(response: &TestResponse, field: &str) {
    response.assert_error(422, "validation_failed");
    assert!(
        response.body["error"]["errors"][field].is_array(),
        "expected an error naming {field}: {}",
        response.body
    );
}

#[tokio::test]
async fn create_read_update_and_replace_a_dosage_option() {
    let app = TestApp::new().await;
    let (medication_id, medication_portable) = medication(&app).await;

    // Created with the medication's portable id; decimals stay exact.
    let created = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option(
                json!(medication_portable),
                json!({
                    "amount": "0.5",
                    "unit": "ml",
                    "frequency": "  every 4 to 6 hours  ",
                    "description": "Children's suspension",
                    "default_for_children": true,
                    "default_max_daily_doses": 4,
                    "default_min_hours_between_doses": "4.50",
                    "default_dose_cycle": "daily",
                    "current_supply": "2.50",
                    "reorder_threshold": "1",
                }),
            ),
        )
        .await;
    created.assert_status(201);
    let d = created.data().clone();
    let keys: BTreeSet<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, KEYS.into_iter().collect());
    assert_eq!(d["medication_id"], medication_id);
    assert_eq!(d["medication_portable_id"], medication_portable.as_str());
    assert_eq!(d["amount"], "0.5");
    assert_eq!(d["unit"], "ml");
    assert_eq!(d["frequency"], "every 4 to 6 hours");
    assert_eq!(d["default_for_adults"], false);
    assert_eq!(d["default_for_children"], true);
    assert_eq!(d["default_max_daily_doses"], 4);
    assert_eq!(d["default_min_hours_between_doses"], "4.5");
    assert_eq!(d["default_dose_cycle"], "daily");
    assert_eq!(d["current_supply"], "2.5");
    assert_eq!(d["reorder_threshold"], "1");
    assert_eq!(d["created_at"], d["updated_at"]);
    let id = created.id();
    let portable = d["portable_id"].as_str().unwrap().to_string();
    assert_eq!(
        created.etag(),
        format!("\"{portable}.1\""),
        "strong ETag of version 1"
    );

    // Numeric and portable ids name the same option.
    for key in [id.to_string(), portable.clone()] {
        let got = app
            .get(&app.hh(&format!("/dosage_options/{key}")), &app.owner)
            .await;
        got.assert_status(200);
        assert_eq!(got.etag(), created.etag());
        assert_eq!(got.data(), &d);
    }

    // Defaults, and a numeric medication id (also as a numeric string).
    let plain = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option(json!(medication_id.to_string()), json!({"amount": "2"})),
        )
        .await;
    plain.assert_status(201);
    let p = plain.data();
    assert_eq!(p["amount"], "2");
    assert_eq!(p["unit"], "tablet");
    for key in [
        "frequency",
        "description",
        "default_max_daily_doses",
        "default_min_hours_between_doses",
        "default_dose_cycle",
        "current_supply",
        "reorder_threshold",
    ] {
        assert_eq!(p[key], Value::Null, "{key} defaults to null");
    }
    assert_eq!(p["default_for_adults"], false);
    assert_eq!(p["default_for_children"], false);

    let list = app.get(&app.hh("/dosage_options"), &app.owner).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 2);
    assert_eq!(list.data()[0], d);

    // PATCH by numeric id changes only what it names; repeating the
    // medication (by portable id) is allowed.
    let patched = app
        .patch(
            &app.hh(&format!("/dosage_options/{id}")),
            &app.owner,
            json!({"dosage_option": {
                "medication_id": medication_portable,
                "amount": "2.50",
                "description": null,
                "default_for_adults": true,
                "current_supply": "0",
            }}),
            Some(&created.etag()),
        )
        .await;
    patched.assert_status(200);
    let pd = patched.data();
    assert_eq!(pd["amount"], "2.5");
    assert_eq!(pd["unit"], "ml");
    assert_eq!(pd["description"], Value::Null);
    assert_eq!(pd["frequency"], "every 4 to 6 hours");
    assert_eq!(pd["default_for_adults"], true);
    assert_eq!(pd["default_for_children"], true);
    assert_eq!(pd["current_supply"], "0");
    assert_eq!(pd["created_at"], d["created_at"]);
    assert!(pd["updated_at"].as_str() > d["updated_at"].as_str());
    assert_eq!(patched.etag(), format!("\"{portable}.2\""));

    // PUT by portable id replaces everything; omitted fields reset.
    let replaced = app
        .put(
            &app.hh(&format!("/dosage_options/{portable}")),
            &app.owner,
            whole_option(json!({"amount": "10", "unit": "mg", "reorder_threshold": "3.000"})),
            Some(&patched.etag()),
        )
        .await;
    replaced.assert_status(200);
    let r = replaced.data();
    assert_eq!(r["id"], id);
    assert_eq!(r["portable_id"], portable.as_str());
    assert_eq!(r["medication_id"], medication_id);
    assert_eq!(r["amount"], "10");
    assert_eq!(r["unit"], "mg");
    assert_eq!(r["reorder_threshold"], "3");
    for key in [
        "frequency",
        "description",
        "default_max_daily_doses",
        "default_min_hours_between_doses",
        "default_dose_cycle",
        "current_supply",
    ] {
        assert_eq!(r[key], Value::Null, "PUT resets {key}");
    }
    assert_eq!(r["default_for_adults"], false);
    assert_eq!(r["default_for_children"], false);
    assert_eq!(r["created_at"], d["created_at"]);
    assert_eq!(replaced.etag(), format!("\"{portable}.3\""));

    // If-Match is optional.
    let unconditional = app
        .patch(
            &app.hh(&format!("/dosage_options/{id}")),
            &app.owner,
            json!({"dosage_option": {"frequency": "at night"}}),
            None,
        )
        .await;
    unconditional.assert_status(200);
    assert_eq!(unconditional.etag(), format!("\"{portable}.4\""));

    // Every write is in the change feed, household-wide.
    assert_eq!(
        feed(&app, id).await,
        ["create", "update", "update", "update"]
    );
    assert_eq!(feed(&app, plain.id()).await, ["create"]);

    // Unknown ids are 404s.
    for key in ["999999", "0192a5b0-0000-7000-8000-000000000000", "nope"] {
        app.get(&app.hh(&format!("/dosage_options/{key}")), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    app.patch(
        &app.hh("/dosage_options/999999"),
        &app.owner,
        json!({"dosage_option": {}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
}

#[tokio::test]
async fn invalid_attributes_are_refused_and_nothing_is_written() {
    let app = TestApp::new().await;
    let (medication_id, _) = medication(&app).await;
    let path = app.hh("/dosage_options");
    let m = json!(medication_id);

    // A JSON number where a decimal string belongs.
    for field in [
        "amount",
        "current_supply",
        "reorder_threshold",
        "default_min_hours_between_doses",
    ] {
        let r = app
            .post(&path, &app.owner, option(m.clone(), json!({field: 0.5})))
            .await;
        assert_invalid(&r, field);
    }
    // Unknown attributes, inside and outside the envelope.
    assert_invalid(
        &app.post(
            &path,
            &app.owner,
            option(m.clone(), json!({"colour": "red"})),
        )
        .await,
        "colour",
    );
    assert_invalid(
        &app.post(
            &path,
            &app.owner,
            json!({"dosage_option": {"medication_id": medication_id, "amount": "1", "unit": "ml"}, "x": 1}),
        )
        .await,
        "x",
    );
    assert_invalid(
        &app.post(&path, &app.owner, json!({})).await,
        "dosage_option",
    );
    // Required attributes.
    let missing = app
        .post(
            &path,
            &app.owner,
            json!({"dosage_option": {"medication_id": medication_id}}),
        )
        .await;
    assert_invalid(&missing, "amount");
    assert_invalid(&missing, "unit");
    assert_invalid(
        &app.post(
            &path,
            &app.owner,
            json!({"dosage_option": {"amount": "1", "unit": "ml"}}),
        )
        .await,
        "medication_id",
    );
    // Values out of range or outside the vocabularies.
    for (field, value) in [
        ("amount", json!("0")),
        ("amount", json!("-1")),
        ("amount", json!("1e3")),
        ("amount", json!("0.1234567")),
        ("amount", Value::Null),
        ("unit", json!("bucket")),
        ("unit", Value::Null),
        ("frequency", json!("x".repeat(201))),
        ("description", json!("x".repeat(2001))),
        ("default_for_adults", json!("yes")),
        ("default_for_children", Value::Null),
        ("default_max_daily_doses", json!(0)),
        ("default_max_daily_doses", json!("4")),
        ("default_max_daily_doses", json!(1.5)),
        ("default_min_hours_between_doses", json!("-1")),
        ("default_dose_cycle", json!("hourly")),
        ("current_supply", json!("-0.5")),
        ("reorder_threshold", json!("-2")),
        ("medication_id", json!("not an id")),
        ("medication_id", Value::Null),
    ] {
        let r = app
            .post(&path, &app.owner, option(m.clone(), json!({field: value})))
            .await;
        assert_invalid(&r, field);
    }
    // A medication that does not exist in this household is "not found".
    for missing in [json!(999999), json!("0192a5b0-0000-7000-8000-000000000000")] {
        let r = app
            .post(
                &path,
                &app.owner,
                option(m.clone(), json!({"medication_id": missing})),
            )
            .await;
        r.assert_error(404, "not_found");
    }
    // Limits that are just inside are accepted.
    let edge = app
        .post(
            &path,
            &app.owner,
            option(
                m.clone(),
                json!({
                    "amount": "0.000001",
                    "frequency": "x".repeat(200),
                    "description": "x".repeat(2000),
                    "default_max_daily_doses": 1,
                    "default_min_hours_between_doses": "0",
                    "current_supply": "0",
                    "reorder_threshold": "0",
                }),
            ),
        )
        .await;
    edge.assert_status(201);
    assert_eq!(edge.data()["amount"], "0.000001");

    // A medication of another household, by numeric and portable id.
    let (foreign_id, foreign_portable) = app
        .db
        .write(|conn| {
            let now = pillbox::domain::Timestamp::now();
            let household = pillbox::household::store::insert(conn, "Other", "UTC", &now)?;
            let portable = pillbox::db::new_portable_id();
            conn.execute(
                "INSERT INTO medications (portable_id, household_id, name, created_at, updated_at)
                 VALUES (?1, ?2, 'Their pills', ?3, ?3)",
                rusqlite::params![portable, household, now],
            )?;
            Ok((conn.last_insert_rowid(), portable))
        })
        .await
        .unwrap();
    for foreign in [json!(foreign_id), json!(foreign_portable)] {
        assert_not_found(
            &app.post(&path, &app.owner, option(foreign, json!({})))
                .await,
        );
    }

    // A deleted medication takes no new options.
    let (gone, _) = medication(&app).await;
    app.delete(&app.hh(&format!("/medications/{gone}")), &app.owner, None)
        .await
        .assert_status(204);
    assert_not_found(
        &app.post(&path, &app.owner, option(json!(gone), json!({})))
            .await,
    );

    let list = app.get(&path, &app.owner).await;
    assert_eq!(
        list.body["meta"]["total_count"], 1,
        "only the edge case was created"
    );
    let feed_total: i64 = app
        .db
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM change_feed WHERE record_type = 'MedicationDosageOption'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(feed_total, 1, "refused writes leave no change-feed entry");

    // Updates validate too, and cannot move the option to another medication.
    let id = edge.id();
    let member = app.hh(&format!("/dosage_options/{id}"));
    let (other, other_portable) = medication(&app).await;
    for moved in [
        json!(other),
        json!(other_portable),
        json!(foreign_id),
        Value::Null,
    ] {
        let r = app
            .patch(
                &member,
                &app.owner,
                json!({"dosage_option": {"medication_id": moved, "amount": "3"}}),
                None,
            )
            .await;
        assert_invalid(&r, "medication_id");
        let r = app
            .put(
                &member,
                &app.owner,
                whole_option(json!({"medication_id": moved, "amount": "3", "unit": "ml"})),
                None,
            )
            .await;
        assert_invalid(&r, "medication_id");
    }
    for body in [
        json!({"dosage_option": {"amount": 3}}),
        json!({"dosage_option": {"amount": null}}),
        json!({"dosage_option": {"unit": "bucket"}}),
        json!({"dosage_option": {"colour": "red"}}),
        json!({"dosage_option": {"current_supply": "-1"}}),
    ] {
        app.patch(&member, &app.owner, body, None)
            .await
            .assert_error(422, "validation_failed");
    }
    // PUT needs amount and unit.
    let put = app
        .put(
            &member,
            &app.owner,
            json!({"dosage_option": {"frequency": "daily"}}),
            None,
        )
        .await;
    assert_invalid(&put, "amount");
    assert_invalid(&put, "unit");
    assert_invalid(
        &app.put(
            &member,
            &app.owner,
            json!({"dosage_option": {"amount": "1"}}),
            None,
        )
        .await,
        "unit",
    );

    let unchanged = app.get(&member, &app.owner).await;
    assert_eq!(unchanged.etag(), edge.etag(), "nothing changed");
    assert_eq!(unchanged.data(), edge.data());
    assert_eq!(feed(&app, id).await, ["create"]);
}

#[tokio::test]
async fn writes_need_the_inventory_permission_and_any_member_may_read() {
    let app = TestApp::new().await;
    let (medication_id, _) = medication(&app).await;
    let created = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option(json!(medication_id), json!({})),
        )
        .await;
    let id = created.id();
    let portable = created.data()["portable_id"].as_str().unwrap().to_string();
    let member_path = app.hh(&format!("/dosage_options/{id}"));

    let (_, member) = app
        .add_member("plain@example.org", Role::Member, None)
        .await;
    let list = app.get(&app.hh("/dosage_options"), &member).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 1);
    app.get(&app.hh(&format!("/dosage_options/{portable}")), &member)
        .await
        .assert_status(200);
    app.post(
        &app.hh("/dosage_options"),
        &member,
        option(json!(medication_id), json!({})),
    )
    .await
    .assert_error(403, "forbidden");
    app.patch(
        &member_path,
        &member,
        json!({"dosage_option": {"amount": "2"}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    app.put(
        &member_path,
        &member,
        whole_option(json!({"amount": "2", "unit": "ml"})),
        Some(&created.etag()),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(
        app.get(&member_path, &app.owner).await.etag(),
        created.etag()
    );

    // An administrator and a member with the permission may write.
    let keeper = stock_keeper(&app).await;
    app.post(
        &app.hh("/dosage_options"),
        &keeper,
        option(json!(medication_id), json!({"current_supply": "12"})),
    )
    .await
    .assert_status(201);
    let patched = app
        .patch(
            &member_path,
            &keeper,
            json!({"dosage_option": {"amount": "2"}}),
            None,
        )
        .await;
    patched.assert_status(200);
    let (_, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    app.put(
        &member_path,
        &admin,
        whole_option(json!({"amount": "3", "unit": "capsule"})),
        Some(&patched.etag()),
    )
    .await
    .assert_status(200);

    // No credential, or another household's path.
    app.send(
        axum::http::Method::GET,
        &app.hh("/dosage_options"),
        None,
        None,
        &[],
    )
    .await
    .assert_error(401, "unauthorized");
    let other = app.household_id + 1000;
    app.get(
        &format!("/api/v1/households/{other}/dosage_options"),
        &app.owner,
    )
    .await
    .assert_status(404);
}

#[tokio::test]
async fn a_stale_if_match_is_a_conflict_and_changes_nothing() {
    let app = TestApp::new().await;
    let (medication_id, _) = medication(&app).await;
    let created = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option(json!(medication_id), json!({"frequency": "morning"})),
        )
        .await;
    let id = created.id();
    let path = app.hh(&format!("/dosage_options/{id}"));
    let first = app
        .patch(
            &path,
            &app.owner,
            json!({"dosage_option": {"amount": "2"}}),
            Some(&created.etag()),
        )
        .await;
    first.assert_status(200);

    // Two clients read version 1; the second writes after the first.
    app.patch(
        &path,
        &app.owner,
        json!({"dosage_option": {"amount": "5"}}),
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    app.put(
        &path,
        &app.owner,
        whole_option(json!({"amount": "5", "unit": "ml"})),
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    app.patch(
        &path,
        &app.owner,
        json!({"dosage_option": {"amount": "5"}}),
        Some("\"not-an-etag\""),
    )
    .await
    .assert_error(409, "edit_conflict");

    let now = app.get(&path, &app.owner).await;
    assert_eq!(now.etag(), first.etag());
    assert_eq!(now.data(), first.data());
    assert_eq!(now.data()["amount"], "2");
    assert_eq!(now.data()["frequency"], "morning");
    assert_eq!(feed(&app, id).await, ["create", "update"]);
}

#[tokio::test]
async fn the_list_filters_by_medication_and_hides_deleted_medications() {
    let app = TestApp::new().await;
    let (first, first_portable) = medication(&app).await;
    let (second, second_portable) = medication(&app).await;
    let path = app.hh("/dosage_options");
    let mut firsts = Vec::new();
    for amount in ["1", "2", "3"] {
        let r = app
            .post(
                &path,
                &app.owner,
                option(json!(first), json!({"amount": amount})),
            )
            .await;
        firsts.push(r.id());
    }
    let seconds = vec![
        app.post(&path, &app.owner, option(json!(second_portable), json!({})))
            .await
            .id(),
    ];

    let ids = |r: &TestResponse| -> Vec<i64> {
        r.data()
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_i64().unwrap())
            .collect()
    };
    let all = app.get(&path, &app.owner).await;
    assert_eq!(all.body["meta"]["total_count"], 4);
    for (key, expected, owner) in [
        (first.to_string(), &firsts, first),
        (first_portable.clone(), &firsts, first),
        (second.to_string(), &seconds, second),
        (second_portable.clone(), &seconds, second),
    ] {
        let r = app
            .get(&format!("{path}?medication_id={key}"), &app.owner)
            .await;
        r.assert_status(200);
        assert_eq!(&ids(&r), expected, "medication_id={key}");
        assert_eq!(r.body["meta"]["total_count"], expected.len());
        assert!(
            r.data()
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["medication_id"] == owner)
        );
    }
    for bad in ["abc", "0"] {
        let r = app
            .get(&format!("{path}?medication_id={bad}"), &app.owner)
            .await;
        assert_invalid(&r, "medication_id");
    }
    for missing in ["999999", "0192a5b0-0000-7000-8000-000000000000"] {
        app.get(&format!("{path}?medication_id={missing}"), &app.owner)
            .await
            .assert_error(404, "not_found");
    }

    // updated_since
    let future = app
        .get(
            &format!("{path}?updated_since=2999-01-01T00:00:00Z"),
            &app.owner,
        )
        .await;
    assert_eq!(future.body["meta"]["total_count"], 0);
    let past = app
        .get(
            &format!("{path}?updated_since=2000-01-01T00:00:00Z&medication_id={first}"),
            &app.owner,
        )
        .await;
    assert_eq!(past.body["meta"]["total_count"], 3);
    assert_invalid(
        &app.get(&format!("{path}?updated_since=yesterday"), &app.owner)
            .await,
        "updated_since",
    );

    // A deleted medication's options leave the list and cannot be read.
    app.delete(&app.hh(&format!("/medications/{first}")), &app.owner, None)
        .await
        .assert_status(204);
    let after = app.get(&path, &app.owner).await;
    assert_eq!(ids(&after), seconds);
    assert_eq!(after.body["meta"]["total_count"], 1);
    app.get(
        &app.hh(&format!("/dosage_options/{}", firsts[0])),
        &app.owner,
    )
    .await
    .assert_error(404, "not_found");
    assert_not_found(
        &app.get(&format!("{path}?medication_id={first}"), &app.owner)
            .await,
    );
}

#[track_caller]
fn assert_not_found(r: &crate::support::TestResponse) {
    r.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_thousand_dosage_options_page_correctly() {
    let app = TestApp::new().await;
    let (medication_id, medication_portable) = medication(&app).await;
    let (other, _) = medication(&app).await;
    let path = app.hh("/dosage_options");

    // A few through the API, before and after the bulk.
    let mut api_ids = Vec::new();
    for amount in ["0.5", "2.50"] {
        let r = app
            .post(
                &path,
                &app.owner,
                option(json!(medication_portable), json!({"amount": amount})),
            )
            .await;
        r.assert_status(201);
        api_ids.push(r.id());
    }
    // One for another medication, which the filter leaves out.
    app.post(&path, &app.owner, option(json!(other), json!({})))
        .await
        .assert_status(201);

    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            let mut insert = conn.prepare(
                "INSERT INTO dosage_options (portable_id, household_id, medication_id, amount,
                     unit, lock_version, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, 'tablet', 1, ?5, ?5)",
            )?;
            for n in 0..1000 {
                insert.execute(rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    medication_id,
                    format!("{}.25", n + 1),
                    now,
                ])?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let r = app
        .post(
            &path,
            &app.owner,
            option(json!(medication_id), json!({"amount": "7"})),
        )
        .await;
    r.assert_status(201);
    api_ids.push(r.id());

    let stored: BTreeSet<i64> = app
        .db
        .read(move |c| {
            let mut stmt = c.prepare("SELECT id FROM dosage_options WHERE medication_id = ?1")?;
            let ids = stmt
                .query_map([medication_id], |r| r.get(0))?
                .collect::<rusqlite::Result<BTreeSet<i64>>>()?;
            Ok(ids)
        })
        .await
        .unwrap();
    let total = 1000 + api_ids.len();
    assert_eq!(stored.len(), total);
    assert!(api_ids.iter().all(|id| stored.contains(id)));

    for per_page in [100usize, 37] {
        let pages = total.div_ceil(per_page);
        let mut seen = BTreeSet::new();
        let mut last_id = 0;
        for page in 1..=pages {
            let r = app
                .get(
                    &format!(
                        "{path}?medication_id={medication_id}&page={page}&per_page={per_page}"
                    ),
                    &app.owner,
                )
                .await;
            r.assert_status(200);
            assert_eq!(r.body["meta"]["total_count"], total);
            assert_eq!(r.body["meta"]["page"], page);
            assert_eq!(r.body["meta"]["per_page"], per_page);
            let data = r.data().as_array().unwrap();
            let expected = per_page.min(total - (page - 1) * per_page);
            assert_eq!(data.len(), expected, "page {page} of {per_page}");
            for d in data {
                let id = d["id"].as_i64().unwrap();
                assert!(id > last_id, "ids ascend across pages");
                last_id = id;
                assert!(seen.insert(id), "duplicate id {id}");
                assert_eq!(d["medication_id"], medication_id);
                assert_eq!(d["medication_portable_id"], medication_portable.as_str());
            }
        }
        assert_eq!(seen, stored, "no gaps, per_page={per_page}");

        let beyond = app
            .get(
                &format!(
                    "{path}?medication_id={medication_portable}&page={}&per_page={per_page}",
                    pages + 1
                ),
                &app.owner,
            )
            .await;
        beyond.assert_status(200);
        assert_eq!(beyond.data(), &json!([]));
        assert_eq!(beyond.body["meta"]["total_count"], total);
    }

    // Without the filter the other medication's option counts too.
    let everything = app
        .get(&format!("{path}?per_page=100&page=11"), &app.owner)
        .await;
    assert_eq!(everything.body["meta"]["total_count"], total + 1);
    assert_eq!(
        everything.data().as_array().unwrap().len(),
        total + 1 - 1000
    );

    // The API-created ones kept their exact amounts.
    let first = app
        .get(
            &app.hh(&format!("/dosage_options/{}", api_ids[0])),
            &app.owner,
        )
        .await;
    assert_eq!(first.data()["amount"], "0.5");
    let second = app
        .get(
            &app.hh(&format!("/dosage_options/{}", api_ids[1])),
            &app.owner,
        )
        .await;
    assert_eq!(second.data()["amount"], "2.5");

    // Pagination parameters are checked.
    for bad in ["per_page=0", "per_page=101", "page=0", "page=x"] {
        app.get(&format!("{path}?{bad}"), &app.owner)
            .await
            .assert_error(422, "validation_failed");
    }
}

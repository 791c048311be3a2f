//! Stock removals: stock that left other than as a dose, decremented exactly
//! once per submission id, with the inventory management permission.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use pillbox::auth::Role;
use pillbox::medicine::vocab::StockRemovalReason;
use serde_json::{Value, json};

use crate::support::records::{paracetamol, stock_keeper};
use crate::support::{TestApp, TestResponse};

/// Creates the paracetamol medication (current_supply "10.5"): (id, portable id).
async fn medication(app: &TestApp) -> (i64, String) {
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
    )
}

fn removals_path(app: &TestApp, medication: impl std::fmt::Display) -> String {
    app.hh(&format!("/medications/{medication}/stock_removals"))
}

fn submission() -> String {
    pillbox::db::new_portable_id()
}

fn removal(quantity: &str, reason: &str, submission_id: &str) -> Value {
    json!({"stock_removal": {"quantity": quantity, "reason": reason, "submission_id": submission_id}})
}

async fn medication_json(app: &TestApp, id: i64) -> TestResponse {
    let got = app
        .get(&app.hh(&format!("/medications/{id}")), &app.owner)
        .await;
    got.assert_status(200);
    got
}

async fn supply(app: &TestApp, id: i64) -> String {
    medication_json(app, id).await.data()["current_supply"]
        .as_str()
        .unwrap()
        .to_string()
}

fn errors_of(response: &TestResponse) -> Vec<String> {
    response.body["error"]["errors"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The household's stock-removal audit events, newest first.
async fn removal_events(app: &TestApp) -> Vec<Value> {
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    log.assert_status(200);
    log.data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "medication.stock_removed")
        .cloned()
        .collect()
}

/// The latest change-feed entry of a record: (record_type, action).
async fn latest_change(
    app: &TestApp,
    record_type: &'static str,
    record_id: i64,
) -> Option<(String, String)> {
    app.db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT record_type, action FROM change_feed
                 WHERE record_type = ?1 AND record_id = ?2 ORDER BY seq DESC LIMIT 1",
                rusqlite::params![record_type, record_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok())
        })
        .await
        .unwrap()
}

async fn change_count(app: &TestApp) -> i64 {
    app.db
        .read(|c| Ok(c.query_row("SELECT count(*) FROM change_feed", [], |r| r.get(0))?))
        .await
        .unwrap()
}

/// Inserts a dosage option of `medication_id` with its own stock (or none): its id.
async fn dosage_option(
    app: &TestApp,
    household_id: i64,
    medication_id: i64,
    supply: Option<&str>,
) -> i64 {
    let supply = supply.map(str::to_string);
    app.db
        .write(move |c| {
            c.execute(
                "INSERT INTO dosage_options (portable_id, household_id, medication_id, amount, unit,
                     current_supply, created_at, updated_at)
                 VALUES (?1, ?2, ?3, '1', 'tablet', ?4, ?5, ?5)",
                rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    medication_id,
                    supply,
                    pillbox::domain::Timestamp::now()
                ],
            )?;
            Ok(c.last_insert_rowid())
        })
        .await
        .unwrap()
}

/// A dosage option's (current_supply, lock_version).
async fn dosage_stock(app: &TestApp, id: i64) -> (Option<String>, i64) {
    app.db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT current_supply, lock_version FROM dosage_options WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_removal_decrements_the_stock_and_is_listed_newest_first() {
    let app = TestApp::new().await;
    let keeper = stock_keeper(&app).await;
    let (id, portable) = medication(&app).await;
    let before = medication_json(&app, id).await;
    let path = removals_path(&app, id);

    let submission_id = submission();
    let mut body = removal("0.25", "expired", &submission_id);
    body["stock_removal"]["note"] = json!("Found at the back of the cupboard");
    let created = app.post(&path, &keeper, body).await;
    created.assert_status(201);
    let r = created.data();
    assert_eq!(r["medication_id"], id);
    assert_eq!(r["medication_portable_id"], portable.as_str());
    assert_eq!(r["dosage_option_id"], Value::Null);
    assert_eq!(r["quantity"], "0.25");
    assert_eq!(r["reason"], "expired");
    assert_eq!(r["note"], "Found at the back of the cupboard");
    assert_eq!(r["submission_id"], submission_id.as_str());
    assert_eq!(r["supply_before"], "10.5");
    assert_eq!(r["supply_after"], "10.25");
    assert!(r["actor_membership_id"].is_i64());
    assert!(r["portable_id"].is_string() && r["created_at"].is_string());

    // The medication's stock and version moved on, and the change feed says so.
    let after = medication_json(&app, id).await;
    assert_eq!(after.data()["current_supply"], "10.25");
    assert_ne!(after.etag(), before.etag());
    assert_eq!(
        latest_change(&app, "Medication", id).await,
        Some(("Medication".into(), "update".into()))
    );

    // More removals, through the portable id too.
    for (quantity, reason) in [
        ("1", "damaged"),
        ("0.5", "lost"),
        ("2", "returned_to_pharmacy"),
    ] {
        app.post(
            &removals_path(&app, &portable),
            &keeper,
            removal(quantity, reason, &submission()),
        )
        .await
        .assert_status(201);
    }
    assert_eq!(supply(&app, id).await, "6.75");

    let list = app.get(&path, &keeper).await;
    list.assert_status(200);
    assert_eq!(
        list.body["meta"],
        json!({"page": 1, "per_page": 20, "total_count": 4})
    );
    let quantities: Vec<&str> = list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["quantity"].as_str().unwrap())
        .collect();
    assert_eq!(quantities, ["2", "0.5", "1", "0.25"], "newest first");
    assert_eq!(list.data()[3], created.data().clone());

    let page = app
        .get(&format!("{path}?page=2&per_page=3"), &app.owner)
        .await;
    page.assert_status(200);
    assert_eq!(
        page.body["meta"],
        json!({"page": 2, "per_page": 3, "total_count": 4})
    );
    assert_eq!(page.data().as_array().unwrap().len(), 1);
    assert_eq!(page.data()[0]["quantity"], "0.25");
    let by_portable = app
        .get(
            &format!("{}?per_page=2", removals_path(&app, &portable)),
            &keeper,
        )
        .await;
    assert_eq!(by_portable.data().as_array().unwrap().len(), 2);
    assert_eq!(by_portable.data()[0]["quantity"], "2");

    for bad in ["page=0", "per_page=101", "per_page=x"] {
        app.get(&format!("{path}?{bad}"), &keeper)
            .await
            .assert_error(422, "validation_failed");
    }
}

#[tokio::test]
async fn decimal_arithmetic_is_exact() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let path = removals_path(&app, id);
    let first = app
        .post(
            &path,
            &app.owner,
            removal("0.25", "disposed", &submission()),
        )
        .await;
    first.assert_status(201);
    assert_eq!(first.data()["supply_after"], "10.25");
    assert_eq!(supply(&app, id).await, "10.25");

    // Three tenths from 10.25 leave exactly 9.95, which floats do not.
    for _ in 0..3 {
        app.post(&path, &app.owner, removal("0.1", "other", &submission()))
            .await
            .assert_status(201);
    }
    assert_eq!(supply(&app, id).await, "9.95");
    let small = app
        .post(
            &path,
            &app.owner,
            removal("0.000001", "other", &submission()),
        )
        .await;
    small.assert_status(201);
    assert_eq!(small.data()["supply_after"], "9.949999");
    // Trailing zeros are the same quantity.
    let zeros = app
        .post(
            &path,
            &app.owner,
            removal("1.500000", "other", &submission()),
        )
        .await;
    assert_eq!(zeros.data()["quantity"], "1.5");
    assert_eq!(supply(&app, id).await, "8.449999");
}

#[tokio::test]
async fn a_removal_below_zero_is_refused_and_changes_nothing() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let path = removals_path(&app, id);
    let before = medication_json(&app, id).await;
    let changes = change_count(&app).await;

    let refused = app
        .post(&path, &app.owner, removal("10.75", "lost", &submission()))
        .await;
    refused.assert_error(422, "validation_failed");
    assert_eq!(errors_of(&refused), ["quantity"]);
    let message = refused.body["error"]["errors"]["quantity"][0]
        .as_str()
        .unwrap();
    assert!(message.contains("current supply of 10.5"), "{message}");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("10.5")
    );

    let after = medication_json(&app, id).await;
    assert_eq!(after.data()["current_supply"], "10.5");
    assert_eq!(after.etag(), before.etag());
    assert_eq!(change_count(&app).await, changes);
    assert_eq!(
        app.get(&path, &app.owner).await.body["meta"]["total_count"],
        0
    );
    assert!(removal_events(&app).await.is_empty());

    // Exactly all of it may go; then not a millionth more.
    let all = app
        .post(&path, &app.owner, removal("10.5", "expired", &submission()))
        .await;
    all.assert_status(201);
    assert_eq!(all.data()["supply_after"], "0");
    assert_eq!(medication_json(&app, id).await.data()["out_of_stock"], true);
    let more = app
        .post(
            &path,
            &app.owner,
            removal("0.000001", "expired", &submission()),
        )
        .await;
    more.assert_error(422, "validation_failed");
    assert!(
        more.body["error"]["errors"]["quantity"][0]
            .as_str()
            .unwrap()
            .contains("current supply of 0")
    );
    assert_eq!(supply(&app, id).await, "0");
}

#[tokio::test]
async fn a_replayed_submission_returns_the_original_and_decrements_once() {
    let app = TestApp::new().await;
    let keeper = stock_keeper(&app).await;
    let (id, portable) = medication(&app).await;
    let submission_id = submission();
    let mut body = removal("0.25", "damaged", &submission_id);
    body["stock_removal"]["note"] = json!("Blister pack crushed");

    let first = app
        .post(&removals_path(&app, id), &keeper, body.clone())
        .await;
    first.assert_status(201);
    let etag = medication_json(&app, id).await.etag();
    let changes = change_count(&app).await;

    // The same facts again: a retry after a dropped connection, also through
    // the portable id, an upper-case submission id and "0.250".
    let again = app
        .post(&removals_path(&app, &portable), &keeper, body.clone())
        .await;
    again.assert_status(201);
    assert_eq!(again.body, first.body);
    let mut respelled = body.clone();
    respelled["stock_removal"]["submission_id"] = json!(submission_id.to_uppercase());
    respelled["stock_removal"]["quantity"] = json!("0.250");
    let respelled = app
        .post(&removals_path(&app, id), &app.owner, respelled)
        .await;
    respelled.assert_status(201);
    assert_eq!(respelled.body, first.body);

    assert_eq!(supply(&app, id).await, "10.25");
    assert_eq!(medication_json(&app, id).await.etag(), etag);
    assert_eq!(change_count(&app).await, changes);
    assert_eq!(
        app.get(&removals_path(&app, id), &keeper).await.body["meta"]["total_count"],
        1
    );
    assert_eq!(removal_events(&app).await.len(), 1);

    // A submission id is per medication: another medication may use it.
    let (other, _) = medication(&app).await;
    let elsewhere = app.post(&removals_path(&app, other), &keeper, body).await;
    elsewhere.assert_status(201);
    assert_ne!(elsewhere.data()["id"], first.data()["id"]);
    assert_eq!(supply(&app, other).await, "10.25");
    assert_eq!(supply(&app, id).await, "10.25");
}

#[tokio::test]
async fn changed_facts_under_a_reused_submission_id_are_refused() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let household_id = app.household_id;
    let dosage = dosage_option(&app, household_id, id, Some("5")).await;
    let path = removals_path(&app, id);
    let submission_id = submission();
    let mut original = removal("0.25", "expired", &submission_id);
    original["stock_removal"]["note"] = json!("Out of date");
    app.post(&path, &app.owner, original.clone())
        .await
        .assert_status(201);
    let etag = medication_json(&app, id).await.etag();
    let changes = change_count(&app).await;

    let changes_of_fact = [
        ("quantity", json!("0.5")),
        ("reason", json!("lost")),
        ("note", json!("Something else")),
        ("note", Value::Null),
        ("dosage_id", json!(dosage.to_string())),
    ];
    for (field, value) in changes_of_fact {
        let mut changed = original.clone();
        changed["stock_removal"][field] = value.clone();
        let refused = app.post(&path, &app.owner, changed).await;
        refused.assert_error(409, "submission_id_reused");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("submission_id"),
            "{field}={value}: {}",
            refused.body
        );
    }
    assert_eq!(supply(&app, id).await, "10.25");
    assert_eq!(medication_json(&app, id).await.etag(), etag);
    assert_eq!(dosage_stock(&app, dosage).await, (Some("5".into()), 1));
    assert_eq!(change_count(&app).await, changes);
    assert_eq!(
        app.get(&path, &app.owner).await.body["meta"]["total_count"],
        1
    );
    assert_eq!(removal_events(&app).await.len(), 1);
}

#[tokio::test]
async fn removals_need_the_inventory_permission_also_on_a_replay() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let path = removals_path(&app, id);
    let (_, member) = app
        .add_member("plain@example.org", Role::Member, None)
        .await;

    app.get(&path, &member).await.assert_error(403, "forbidden");
    app.post(&path, &member, removal("1", "lost", &submission()))
        .await
        .assert_error(403, "forbidden");
    // Checked before the medication is looked up.
    app.post(
        &removals_path(&app, 999_999),
        &member,
        removal("1", "lost", &submission()),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(supply(&app, id).await, "10.5");

    // An administrator holds the permission implicitly.
    let (_, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    app.get(&path, &admin).await.assert_status(200);

    let keeper = stock_keeper(&app).await;
    let body = removal("1", "lost", &submission());
    app.post(&path, &keeper, body.clone())
        .await
        .assert_status(201);
    app.get(&path, &keeper).await.assert_status(200);

    // The permission is taken away: the saved result is not replayed.
    app.db
        .write(|c| {
            c.execute("UPDATE memberships SET inventory_management = 0", [])?;
            Ok(())
        })
        .await
        .unwrap();
    let replay = app.post(&path, &keeper, body).await;
    replay.assert_error(403, "forbidden");
    assert!(replay.body["error"].get("errors").is_none());
    app.get(&path, &keeper).await.assert_error(403, "forbidden");
    assert_eq!(supply(&app, id).await, "9.5");
    assert_eq!(removal_events(&app).await.len(), 1);
}

#[tokio::test]
async fn unknown_or_foreign_medications_are_not_found() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;

    let (other_household, foreign_id, foreign_portable) = app
        .db
        .write(|conn| {
            let household = pillbox::household::store::insert(conn, "Other", "UTC", &pillbox::domain::Timestamp::now())?;
            let portable = pillbox::db::new_portable_id();
            conn.execute(
                "INSERT INTO medications (portable_id, household_id, name, current_supply, created_at, updated_at)
                 VALUES (?1, ?2, 'Their aspirin', '20', ?3, ?3)",
                rusqlite::params![portable, household, pillbox::domain::Timestamp::now()],
            )?;
            Ok((household, conn.last_insert_rowid(), portable))
        })
        .await
        .unwrap();

    for key in [
        foreign_id.to_string(),
        foreign_portable.clone(),
        "999999".into(),
        pillbox::db::new_portable_id(),
        "not-an-id".into(),
        "0".into(),
    ] {
        let path = removals_path(&app, &key);
        app.get(&path, &app.owner)
            .await
            .assert_error(404, "not_found");
        app.post(&path, &app.owner, removal("1", "lost", &submission()))
            .await
            .assert_error(404, "not_found");
    }
    // Nor through the other household's own path.
    let theirs =
        format!("/api/v1/households/{other_household}/medications/{foreign_id}/stock_removals");
    app.get(&theirs, &app.owner)
        .await
        .assert_error(404, "not_found");
    app.post(&theirs, &app.owner, removal("1", "lost", &submission()))
        .await
        .assert_error(404, "not_found");
    let foreign_supply: String = app
        .db
        .write(move |c| {
            Ok(c.query_row(
                "SELECT current_supply FROM medications WHERE id = ?1",
                [foreign_id],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(foreign_supply, "20");

    // A deleted medication has no removals to list or make.
    let etag = medication_json(&app, id).await.etag();
    app.delete(
        &app.hh(&format!("/medications/{id}")),
        &app.owner,
        Some(&etag),
    )
    .await
    .assert_status(204);
    app.get(&removals_path(&app, id), &app.owner)
        .await
        .assert_error(404, "not_found");
    app.post(
        &removals_path(&app, id),
        &app.owner,
        removal("1", "lost", &submission()),
    )
    .await
    .assert_error(404, "not_found");
}

#[tokio::test]
async fn a_dosage_id_decrements_that_dosage_options_own_stock() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let household_id = app.household_id;
    let tracked = dosage_option(&app, household_id, id, Some("5")).await;
    let path = removals_path(&app, id);
    let medication_etag = medication_json(&app, id).await.etag();

    let mut body = removal("0.25", "damaged", &submission());
    body["stock_removal"]["dosage_id"] = json!(tracked.to_string());
    let created = app.post(&path, &app.owner, body).await;
    created.assert_status(201);
    assert_eq!(created.data()["dosage_option_id"], tracked);
    assert_eq!(created.data()["supply_before"], "5");
    assert_eq!(created.data()["supply_after"], "4.75");
    assert_eq!(dosage_stock(&app, tracked).await, (Some("4.75".into()), 2));
    // The medication's own stock is untouched.
    assert_eq!(supply(&app, id).await, "10.5");
    assert_eq!(medication_json(&app, id).await.etag(), medication_etag);
    assert_eq!(
        latest_change(&app, "MedicationDosageOption", tracked).await,
        Some(("MedicationDosageOption".into(), "update".into()))
    );
    assert_eq!(
        latest_change(&app, "Medication", id).await,
        Some(("Medication".into(), "create".into()))
    );

    // A JSON integer names it too.
    let mut body = removal("4.75", "expired", &submission());
    body["stock_removal"]["dosage_id"] = json!(tracked);
    app.post(&path, &app.owner, body).await.assert_status(201);
    assert_eq!(dosage_stock(&app, tracked).await, (Some("0".into()), 3));

    // Its own stock cannot go below zero either.
    let mut body = removal("0.1", "expired", &submission());
    body["stock_removal"]["dosage_id"] = json!(tracked);
    let refused = app.post(&path, &app.owner, body).await;
    refused.assert_error(422, "validation_failed");
    assert!(
        refused.body["error"]["errors"]["quantity"][0]
            .as_str()
            .unwrap()
            .contains("current supply of 0")
    );
    assert_eq!(dosage_stock(&app, tracked).await, (Some("0".into()), 3));

    // Untracked, another medication's, another household's or unknown: 422 naming dosage_id.
    let untracked = dosage_option(&app, household_id, id, None).await;
    let (other_medication, _) = medication(&app).await;
    let elsewhere = dosage_option(&app, household_id, other_medication, Some("5")).await;
    let (foreign_household, foreign_medication) = app
        .db
        .write(|conn| {
            let household = pillbox::household::store::insert(conn, "Other", "UTC", &pillbox::domain::Timestamp::now())?;
            conn.execute(
                "INSERT INTO medications (portable_id, household_id, name, current_supply, created_at, updated_at)
                 VALUES (?1, ?2, 'Theirs', '20', ?3, ?3)",
                rusqlite::params![pillbox::db::new_portable_id(), household, pillbox::domain::Timestamp::now()],
            )?;
            Ok((household, conn.last_insert_rowid()))
        })
        .await
        .unwrap();
    let foreign = dosage_option(&app, foreign_household, foreign_medication, Some("5")).await;
    let changes = change_count(&app).await;
    // Dosage options that are not this medication's are "not found".
    // (A portable id that names no option of this medication too: issue 10
    // point 12 made portable ids acceptable references.)
    for dosage_id in [
        json!(elsewhere),
        json!(foreign.to_string()),
        json!("999999"),
        json!(pillbox::db::new_portable_id()),
    ] {
        let mut body = removal("1", "lost", &submission());
        body["stock_removal"]["dosage_id"] = dosage_id.clone();
        app.post(&path, &app.owner, body)
            .await
            .assert_error(404, "not_found");
    }
    for dosage_id in [
        json!(untracked.to_string()),
        json!("abc"),
        json!("0"),
        json!(-3),
        json!(1.5),
    ] {
        let mut body = removal("1", "lost", &submission());
        body["stock_removal"]["dosage_id"] = dosage_id.clone();
        let refused = app.post(&path, &app.owner, body).await;
        refused.assert_error(422, "validation_failed");
        assert_eq!(
            errors_of(&refused),
            ["dosage_id"],
            "dosage_id={dosage_id}: {}",
            refused.body
        );
    }
    assert_eq!(dosage_stock(&app, untracked).await, (None, 1));
    assert_eq!(dosage_stock(&app, elsewhere).await, (Some("5".into()), 1));
    assert_eq!(dosage_stock(&app, foreign).await, (Some("5".into()), 1));
    assert_eq!(supply(&app, id).await, "10.5");
    assert_eq!(change_count(&app).await, changes);

    // A null dosage_id is the medication's stock.
    let mut body = removal("0.5", "lost", &submission());
    body["stock_removal"]["dosage_id"] = Value::Null;
    body["stock_removal"]["note"] = Value::Null;
    let plain = app.post(&path, &app.owner, body).await;
    plain.assert_status(201);
    assert_eq!(plain.data()["dosage_option_id"], Value::Null);
    assert_eq!(plain.data()["note"], Value::Null);
    assert_eq!(supply(&app, id).await, "10");
}

#[tokio::test]
async fn every_removal_is_audited_without_its_note() {
    let app = TestApp::new().await;
    let keeper = stock_keeper(&app).await;
    let (id, _) = medication(&app).await;
    let mut body = removal("2", "returned_to_pharmacy", &submission());
    body["stock_removal"]["note"] = json!("Private: side effects made me stop");
    let created = app.post(&removals_path(&app, id), &keeper, body).await;
    created.assert_status(201);
    app.post(
        &removals_path(&app, id),
        &keeper,
        removal("0.5", "expired", &submission()),
    )
    .await
    .assert_status(201);

    let events = removal_events(&app).await;
    assert_eq!(events.len(), 2);
    let event = &events[1];
    assert_eq!(
        event["actor_membership_id"],
        created.data()["actor_membership_id"]
    );
    assert_eq!(event["subject_type"], "medication");
    assert_eq!(event["subject_id"], id);
    let metadata = &event["metadata"];
    assert_eq!(metadata["quantity"], "2");
    assert_eq!(metadata["reason"], "returned_to_pharmacy");
    assert_eq!(metadata["medication_id"], id);
    assert_eq!(metadata["stock_removal_id"], created.data()["id"]);
    assert!(metadata.get("note").is_none());
    assert!(!event.to_string().contains("side effects"), "{event}");
    assert_eq!(events[0]["metadata"]["quantity"], "0.5");
}

#[tokio::test]
async fn invalid_removals_are_refused_with_the_field_named() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let path = removals_path(&app, id);
    let good = removal("1", "expired", &submission());

    let cases: Vec<(&str, Value)> = vec![
        ("colour", json!({"colour": "red"})),
        ("quantity", json!({"quantity": 0.25})),
        ("quantity", json!({"quantity": 1})),
        ("quantity", json!({"quantity": "0"})),
        ("quantity", json!({"quantity": "-1"})),
        ("quantity", json!({"quantity": "1e2"})),
        ("quantity", json!({"quantity": "0.1234567"})),
        ("quantity", json!({"quantity": null})),
        ("reason", json!({"reason": "stolen_by_cat"})),
        ("reason", json!({"reason": null})),
        ("reason", json!({"reason": 3})),
        ("submission_id", json!({"submission_id": "retry-1"})),
        ("submission_id", json!({"submission_id": 7})),
        ("note", json!({"note": "x".repeat(1001)})),
        ("note", json!({"note": 5})),
    ];
    for (field, change) in cases {
        let mut body = good.clone();
        for (k, v) in change.as_object().unwrap() {
            body["stock_removal"][k] = v.clone();
        }
        let refused = app.post(&path, &app.owner, body).await;
        refused.assert_error(422, "validation_failed");
        assert_eq!(errors_of(&refused), [field], "{change}: {}", refused.body);
    }
    for missing in ["quantity", "reason", "submission_id"] {
        let mut body = good.clone();
        body["stock_removal"]
            .as_object_mut()
            .unwrap()
            .remove(missing);
        let refused = app.post(&path, &app.owner, body).await;
        refused.assert_error(422, "validation_failed");
        assert_eq!(errors_of(&refused), [missing]);
    }
    let outer = app
        .post(
            &path,
            &app.owner,
            json!({"stock_removal": good["stock_removal"], "extra": 1}),
        )
        .await;
    outer.assert_error(422, "validation_failed");
    assert_eq!(errors_of(&outer), ["extra"]);
    app.post(&path, &app.owner, json!({}))
        .await
        .assert_error(422, "validation_failed");

    // A note of exactly 1000 characters is fine.
    let mut body = removal("1", "other", &submission());
    body["stock_removal"]["note"] = json!("é".repeat(1000));
    app.post(&path, &app.owner, body).await.assert_status(201);
    assert_eq!(supply(&app, id).await, "9.5");
    assert_eq!(
        app.get(&path, &app.owner).await.body["meta"]["total_count"],
        1
    );
}

#[tokio::test]
async fn the_reasons_are_documented_and_in_the_capability_document() {
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
    caps.assert_status(200);
    assert_eq!(caps.data()["inventory"]["stock_removals"], true);
    assert_eq!(
        caps.data()["inventory"]["stock_removal_reasons"],
        json!(StockRemovalReason::ALL)
    );
    assert_eq!(
        caps.data()["inventory"]["stock_removal_reasons"],
        json!([
            "expired",
            "damaged",
            "lost",
            "disposed",
            "returned_to_pharmacy",
            "other"
        ])
    );
    assert_eq!(caps.data()["features"]["medications"], true);

    let doc = app.document();
    let item =
        &doc["paths"]["/households/{household_id}/medications/{medication_id}/stock_removals"];
    assert_eq!(item["get"]["operationId"], "listStockRemovals");
    assert_eq!(item["post"]["operationId"], "createStockRemoval");
    assert_eq!(item["post"]["tags"], json!(["Household", "Stock removals"]));
    let description = item["post"]["description"].as_str().unwrap();
    for reason in StockRemovalReason::ALL {
        assert!(
            description.contains(&format!("`{reason}`")),
            "{reason} undocumented"
        );
    }
    assert!(item["post"]["responses"]["409"].is_object());
    let request =
        &doc["components"]["schemas"]["StockRemovalCreateRequest"]["properties"]["stock_removal"];
    assert_eq!(
        request["properties"]["reason"]["enum"],
        json!(StockRemovalReason::ALL)
    );
}

// ------------------------------------------------------------ concurrency

/// A tiny blocking HTTP/1.1 client: one request per connection.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> (u16, Value) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().replace(' ', "") == "transfer-encoding:chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    let json = serde_json::from_str(&body).unwrap_or_else(|_| json!({"raw": body}));
    (status, json)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_removals_from_two_clients_lose_no_update() {
    const PER_CLIENT: usize = 50;
    let app = TestApp::new().await;
    let keeper = stock_keeper(&app).await;
    let created = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": "Ibuprofen 200mg", "current_supply": "100"}}),
        )
        .await;
    created.assert_status(201);
    let id = created.id();

    // One real server on a free port, serving the same Router.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app.router.clone();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let path = removals_path(&app, id);
    let clients: Vec<_> = [keeper.clone(), app.owner.clone()]
        .into_iter()
        .map(|token| {
            let path = path.clone();
            std::thread::spawn(move || {
                for n in 0..PER_CLIENT {
                    let body = removal("0.25", "expired", &submission()).to_string();
                    let (status, answer) = http(addr, "POST", &path, &token, Some(&body));
                    assert_eq!(status, 201, "removal {n}: {answer}");
                }
            })
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        for client in clients {
            client.join().expect("client thread");
        }
    })
    .await
    .unwrap();

    // 100 - 100 × 0.25: every decrement landed.
    let (status, medication) = http(
        addr,
        "GET",
        &app.hh(&format!("/medications/{id}")),
        &app.owner,
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(medication["data"]["current_supply"], "75");
    let (status, list) = http(addr, "GET", &format!("{path}?per_page=100"), &keeper, None);
    assert_eq!(status, 200);
    assert_eq!(list["meta"]["total_count"], 2 * PER_CLIENT);
    let items = list["data"].as_array().unwrap();
    assert_eq!(items.len(), 2 * PER_CLIENT);
    // Each removal saw the stock the previous one left: 99.75, 99.5, ... 75.
    let mut afters: Vec<String> = items
        .iter()
        .map(|r| r["supply_after"].as_str().unwrap().to_string())
        .collect();
    afters.reverse();
    let expected: Vec<String> = (1..=2 * PER_CLIENT)
        .map(|k| {
            let hundredths = 10_000 - 25 * k;
            let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        })
        .collect();
    assert_eq!(afters, expected);
    assert_eq!(supply(&app, id).await, "75");
    server.abort();
}

#[tokio::test]
async fn an_idempotency_key_replays_the_saved_removal_after_rechecking_the_permission() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app).await;
    let keeper = stock_keeper(&app).await;
    let path = removals_path(&app, id);
    let body = removal("1.5", "damaged", &submission());
    const KEY: &str = "removal-1";

    let first = app.post_keyed(&path, &keeper, &body, KEY).await;
    first.assert_status(201);
    assert_eq!(supply(&app, id).await, "9");

    // After a dropped connection: the same answer, one decrement, one audit.
    let again = app.post_keyed(&path, &keeper, &body, KEY).await;
    again.assert_status(201);
    assert_eq!(again.body, first.body);
    assert_eq!(supply(&app, id).await, "9");
    let audits: i64 = app
        .db
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT COUNT(*) FROM audit_events WHERE event_type = 'medication.stock_removed'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(audits, 1);

    // The key with another body (a new submission) is refused.
    app.post_keyed(
        &path,
        &keeper,
        &removal("1.5", "damaged", &submission()),
        KEY,
    )
    .await
    .assert_error(409, "idempotency_key_reused");

    // A member who lost the permission never gets the saved removal.
    app.db
        .write(|conn| {
            conn.execute(
                "UPDATE memberships SET inventory_management = 0 WHERE role = 'member'",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let refused = app.post_keyed(&path, &keeper, &body, KEY).await;
    refused.assert_error(403, "forbidden");
    assert!(!refused.body.to_string().contains("damaged"));
    assert_eq!(supply(&app, id).await, "9");
}

/// The note limit and the reasons the rule enforces are the ones the served
/// schemas declare, request and response alike.
#[tokio::test]
async fn stock_removal_limits_are_documented_from_the_rule() {
    use pillbox::medicine::stock_removals::MAX_NOTE;
    let app = TestApp::new().await;
    let schemas = &app.document()["components"]["schemas"];
    let request = &schemas["StockRemovalCreateRequest"]["properties"]["stock_removal"];
    for schema in [request, &schemas["StockRemoval"]] {
        assert_eq!(schema["properties"]["note"]["maxLength"], MAX_NOTE);
        assert_eq!(
            schema["properties"]["reason"]["enum"],
            json!(StockRemovalReason::ALL)
        );
    }
}

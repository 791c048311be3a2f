use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{paracetamol, stock_keeper};

#[tokio::test]
async fn create_read_update_replace_delete_a_medication() {
    let app = TestApp::new().await;
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    let m = created.data().clone();
    assert_eq!(m["display_name"], "Paracetamol");
    assert_eq!(m["current_supply"], "10.5");
    assert_eq!(m["low_stock"], false);
    assert_eq!(m["out_of_stock"], false);
    assert_eq!(m["reorder_status"], Value::Null);
    assert_eq!(m["days_until_out_of_stock"], Value::Null);
    let id = created.id();
    let portable = m["portable_id"].as_str().unwrap().to_string();

    // Numeric and portable ids name the same medication.
    let by_portable = app
        .get(&app.hh(&format!("/medications/{portable}")), &app.owner)
        .await;
    by_portable.assert_status(200);
    assert_eq!(by_portable.etag(), created.etag());
    assert_eq!(by_portable.data(), &m);

    let list = app.get(&app.hh("/medications"), &app.owner).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 1);

    let patched = app
        .patch(
            &app.hh(&format!("/medications/{id}")),
            &app.owner,
            json!({"medication": {"friendly_name": null, "reorder_threshold": "11"}}),
            Some(&created.etag()),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["display_name"], "Paracetamol 500mg tablets");
    assert_eq!(patched.data()["low_stock"], true);

    // A stale ETag changes nothing.
    let stale = app
        .patch(
            &app.hh(&format!("/medications/{id}")),
            &app.owner,
            json!({"medication": {"name": "Other"}}),
            Some(&created.etag()),
        )
        .await;
    stale.assert_error(409, "edit_conflict");

    // PUT replaces the description but keeps the stock count.
    let replaced = app
        .put(
            &app.hh(&format!("/medications/{portable}")),
            &app.owner,
            json!({"medication": {
                "name": "Ibuprofen 200mg", "location_id": null, "friendly_name": null,
                "category": null, "description": null, "dose_amount": null, "dose_unit": null,
                "default_schedule_type": null, "reorder_threshold": null, "barcode": null,
                "dmd_code": null, "dmd_system": null, "dmd_concept_class": null,
            }}),
            Some(&patched.etag()),
        )
        .await;
    replaced.assert_status(200);
    assert_eq!(replaced.data()["category"], Value::Null);
    assert_eq!(replaced.data()["barcode"], Value::Null);
    assert_eq!(replaced.data()["current_supply"], "10.5");

    app.delete(
        &app.hh(&format!("/medications/{id}")),
        &app.owner,
        Some(&replaced.etag()),
    )
    .await
    .assert_status(204);
    app.get(&app.hh(&format!("/medications/{id}")), &app.owner)
        .await
        .assert_error(404, "not_found");
    let list = app.get(&app.hh("/medications"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 0);
}

#[tokio::test]
async fn decimals_are_strings_and_validated() {
    let app = TestApp::new().await;
    let number = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": "A", "current_supply": 10.5}}),
        )
        .await;
    number.assert_error(422, "validation_failed");
    assert!(number.body["error"]["errors"]["current_supply"].is_array());

    for (field, value) in [
        ("current_supply", "-1"),
        ("dose_amount", "0"),
        ("current_supply", "1e3"),
        ("reorder_threshold", "abc"),
    ] {
        let r = app
            .post(
                &app.hh("/medications"),
                &app.owner,
                json!({"medication": {"name": "A", field: value}}),
            )
            .await;
        r.assert_error(422, "validation_failed");
        assert!(
            r.body["error"]["errors"][field].is_array(),
            "{field}={value}: {}",
            r.body
        );
    }
    for (field, value) in [
        ("barcode", "123"),
        ("barcode", "12345678901234567"),
        ("dose_unit", "bucket"),
        ("default_schedule_type", "hourly"),
        ("dmd_concept_class", "XYZ"),
    ] {
        let r = app
            .post(
                &app.hh("/medications"),
                &app.owner,
                json!({"medication": {"name": "A", field: value}}),
            )
            .await;
        r.assert_error(422, "validation_failed");
        assert!(
            r.body["error"]["errors"][field].is_array(),
            "{field}={value}: {}",
            r.body
        );
    }
    app.post(
        &app.hh("/medications"),
        &app.owner,
        json!({"medication": {"name": "A", "location_id": "999"}}),
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        &app.hh("/medications"),
        &app.owner,
        json!({"medication": {"dose_amount": "1"}}),
    )
    .await
    .assert_error(422, "validation_failed");
    app.post(
        &app.hh("/medications"),
        &app.owner,
        json!({"medication": {"name": "A", "colour": "red"}}),
    )
    .await
    .assert_error(422, "validation_failed");
    let list = app.get(&app.hh("/medications"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 0, "nothing was created");
}

#[tokio::test]
async fn inventory_adjust_order_and_receive() {
    let app = TestApp::new().await;
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    let id = created.id();
    let path = |op: &str| app.hh(&format!("/medications/{id}/{op}"));

    let adjusted = app
        .patch(
            &path("adjust_inventory"),
            &app.owner,
            json!({"adjustment": {"quantity": "3.25", "reason": "stock_count"}}),
            None,
        )
        .await;
    adjusted.assert_status(200);
    assert_eq!(adjusted.data()["current_supply"], "3.25");
    assert_eq!(adjusted.data()["low_stock"], true);

    app.patch(
        &path("adjust_inventory"),
        &app.owner,
        json!({"adjustment": {"quantity": "3", "reason": "guess"}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");
    app.patch(
        &path("adjust_inventory"),
        &app.owner,
        json!({"adjustment": {"quantity": "3", "reason": "stock_count"}}),
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");

    let ordered = app
        .patch(&path("mark_as_ordered"), &app.owner,
            json!({"order_details": {"supplier": "High Street Pharmacy", "quantity": "32", "expected_on": "2026-12-01"}}), None)
        .await;
    ordered.assert_status(200);
    assert_eq!(ordered.data()["reorder_status"], "ordered");
    assert_eq!(ordered.data()["reorder_quantity"], "32");
    assert_eq!(ordered.data()["current_supply"], "3.25");

    let received = app
        .patch(&path("mark_as_received"), &app.owner, json!({}), None)
        .await;
    received.assert_status(200);
    assert_eq!(received.data()["reorder_status"], "received");
    assert_eq!(received.data()["current_supply"], "35.25");
    assert!(received.data()["reorder_received_at"].is_string());

    // An order with no body, then a receipt that says how much came.
    let request = axum::http::Request::builder()
        .method("PATCH")
        .uri(path("mark_as_ordered"))
        .header("authorization", format!("Bearer {}", app.owner))
        .body(axum::body::Body::empty())
        .unwrap();
    app.raw_request(request).await.assert_status(200);
    app.patch(&path("mark_as_received"), &app.owner, json!({}), None)
        .await
        .assert_error(409, "no_order_quantity");
    let received = app
        .patch(
            &path("mark_as_received"),
            &app.owner,
            json!({"order_details": {"quantity": "0.75"}}),
            None,
        )
        .await;
    assert_eq!(received.data()["current_supply"], "36");

    let audit = app.get(&app.hh("/admin/audit_logs"), &app.owner).await;
    let kinds: Vec<&str> = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event_type"].as_str())
        .collect();
    for kind in [
        "medication.inventory_adjusted",
        "medication.marked_as_ordered",
        "medication.marked_as_received",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
}

#[tokio::test]
async fn stock_changes_need_the_inventory_permission() {
    let app = TestApp::new().await;
    let id = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await
        .id();
    let (_, member) = app
        .add_member("plain@example.org", Role::Member, None)
        .await;
    // Any member may read the household's medicines.
    app.get(&app.hh(&format!("/medications/{id}")), &member)
        .await
        .assert_status(200);
    app.post(&app.hh("/medications"), &member, paracetamol())
        .await
        .assert_error(403, "forbidden");
    app.patch(
        &app.hh(&format!("/medications/{id}")),
        &member,
        json!({"medication": {"name": "X"}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    app.patch(
        &app.hh(&format!("/medications/{id}/adjust_inventory")),
        &member,
        json!({"adjustment": {"quantity": "1", "reason": "stock_count"}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    app.delete(&app.hh(&format!("/medications/{id}")), &member, None)
        .await
        .assert_error(403, "forbidden");

    let keeper = stock_keeper(&app).await;
    app.post(&app.hh("/medications"), &keeper, paracetamol())
        .await
        .assert_status(201);
    app.patch(
        &app.hh(&format!("/medications/{id}/adjust_inventory")),
        &keeper,
        json!({"adjustment": {"quantity": "1", "reason": "stock_count"}}),
        None,
    )
    .await
    .assert_status(200);
}

/// The limits declared by the body types: each refusal names its field with
/// the message the rule gave before and changes nothing, and the served
/// schema states the same limit.
#[tokio::test]
async fn limits_declared_by_the_body_types_name_the_field_and_change_nothing() {
    let app = TestApp::new().await;
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    let id = created.id();
    let member = app.hh(&format!("/medications/{id}"));
    for (field, value, message) in [
        (
            "name",
            json!("x".repeat(201)),
            "must be at most 200 characters",
        ),
        ("name", json!("   "), "must not be blank"),
        (
            "friendly_name",
            json!("x".repeat(201)),
            "must be at most 200 characters",
        ),
        (
            "category",
            json!("x".repeat(101)),
            "must be at most 100 characters",
        ),
        (
            "description",
            json!("x".repeat(2001)),
            "must be at most 2000 characters",
        ),
        (
            "dmd_system",
            json!("x".repeat(201)),
            "must be at most 200 characters",
        ),
        ("barcode", json!("50123456789OO"), "must be 13 to 14 digits"),
        ("dmd_code", json!("12345"), "must be 6 to 18 digits"),
    ] {
        let r = app
            .patch(
                &member,
                &app.owner,
                json!({"medication": {field: value}}),
                Some(&created.etag()),
            )
            .await;
        r.assert_error(422, "validation_failed");
        assert_eq!(
            r.body["error"]["errors"][field],
            json!([message]),
            "{field}"
        );
    }
    let note = app
        .patch(
            &app.hh(&format!("/medications/{id}/adjust_inventory")),
            &app.owner,
            json!({"adjustment": {"quantity": "3", "reason": "stock_count", "note": "x".repeat(1001)}}),
            Some(&created.etag()),
        )
        .await;
    note.assert_error(422, "validation_failed");
    assert_eq!(
        note.body["error"]["errors"]["note"],
        json!(["must be at most 1000 characters"])
    );
    let after = app.get(&member, &app.owner).await;
    assert_eq!(after.etag(), created.etag());
    assert_eq!(after.data(), created.data());

    let schemas = &app.document()["components"]["schemas"];
    let attributes = &schemas["MedicationAttributes"]["properties"];
    assert_eq!(attributes["name"]["maxLength"], 200);
    assert_eq!(attributes["friendly_name"]["maxLength"], 200);
    assert_eq!(attributes["category"]["maxLength"], 100);
    assert_eq!(attributes["description"]["maxLength"], 2000);
    assert_eq!(attributes["barcode"]["pattern"], "^[0-9]{13,14}$");
    assert_eq!(attributes["dmd_code"]["pattern"], "^[0-9]{6,18}$");
    let adjustment = &schemas["InventoryAdjustmentRequest"]["properties"]["adjustment"];
    assert_eq!(adjustment["properties"]["note"]["maxLength"], 1000);
}

/// A medication or a page of them read a dozen times (a page on every
/// reader thread, a medication in place on the test's thread, each of
/// which keeps what it answered until the next commit): every read
/// answers the same, and that answer is returned.
async fn read_everywhere(app: &TestApp, path: &str) -> crate::support::TestResponse {
    let first = app.get(path, &app.owner).await;
    for _ in 0..12 {
        let again = app.get(path, &app.owner).await;
        assert_eq!(again.status, first.status, "every reader thread agrees");
        assert_eq!(
            again.body["data"], first.body["data"],
            "every reader thread agrees"
        );
        assert_eq!(again.body["meta"], first.body["meta"]);
        assert_eq!(again.error_code(), first.error_code());
        assert_eq!(again.header("etag"), first.header("etag"));
    }
    first
}

#[tokio::test]
async fn a_kept_answer_follows_every_change_on_the_very_next_read() {
    let app = TestApp::new().await;
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    let id = created.id();
    let one = app.hh(&format!("/medications/{id}"));
    let list = app.hh("/medications");
    assert_eq!(read_everywhere(&app, &one).await.etag(), created.etag());
    assert_eq!(
        read_everywhere(&app, &list).await.data()[0]["name"],
        "Paracetamol 500mg tablets"
    );

    // A change through the API.
    let patched = app
        .patch(
            &one,
            &app.owner,
            json!({"medication": {"name": "Paracetamol 250mg"}}),
            Some(&created.etag()),
        )
        .await;
    patched.assert_status(200);
    let read = read_everywhere(&app, &one).await;
    assert_eq!(read.etag(), patched.etag());
    assert_eq!(read.data(), patched.data());
    assert_eq!(
        read_everywhere(&app, &list).await.data()[0],
        *patched.data()
    );

    // A change by another connection to the file, as a command run beside
    // the server makes.
    let file = rusqlite::Connection::open(app.dir.path().join("pillbox.sqlite3")).unwrap();
    file.execute(
        "UPDATE medications SET friendly_name = 'Calpol', lock_version = lock_version + 1 WHERE id = ?1",
        [id],
    )
    .unwrap();
    let read = read_everywhere(&app, &one).await;
    assert_eq!(read.data()["display_name"], "Calpol");
    assert_ne!(read.etag(), patched.etag());
    assert_eq!(
        read_everywhere(&app, &list).await.data()[0]["display_name"],
        "Calpol"
    );

    // Each page and filter is an answer of its own.
    let second = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    second.assert_status(201);
    let page_two = read_everywhere(&app, &format!("{list}?per_page=1&page=2")).await;
    assert_eq!(page_two.data().as_array().unwrap().len(), 1);
    assert_eq!(page_two.data()[0]["id"], second.id());
    assert_eq!(page_two.body["meta"]["total_count"], 2);
    let page_one = read_everywhere(&app, &format!("{list}?per_page=1")).await;
    assert_eq!(page_one.data()[0]["id"], id);
    let since = second.data()["updated_at"].as_str().unwrap().to_string();
    let recent = read_everywhere(&app, &format!("{list}?updated_since={since}")).await;
    assert_eq!(recent.body["meta"]["total_count"], 1);
    assert_eq!(
        read_everywhere(&app, &list).await.body["meta"]["total_count"],
        2
    );

    // A deletion.
    app.delete(&one, &app.owner, Some(&read.etag()))
        .await
        .assert_status(204);
    read_everywhere(&app, &one)
        .await
        .assert_error(404, "not_found");
    let listed = read_everywhere(&app, &list).await;
    assert_eq!(listed.body["meta"]["total_count"], 1);
    assert_eq!(listed.data()[0]["id"], second.id());
}

/// A medication is read in place, through a connection of the thread that
/// asks; two servers answered by one thread (as here, where both run on
/// the test's thread) each read their own database, with nothing kept
/// for one shown by the other, though the household and medication ids
/// are the same in both.
#[tokio::test]
async fn two_databases_read_on_one_thread_keep_apart() {
    let first = TestApp::new().await;
    let second = TestApp::new().await;
    let mut calpol = paracetamol();
    calpol["medication"]["friendly_name"] = json!("Calpol");
    let a = first
        .post(&first.hh("/medications"), &first.owner, paracetamol())
        .await;
    let b = second
        .post(&second.hh("/medications"), &second.owner, calpol)
        .await;
    assert_eq!(a.id(), b.id(), "the same id in both databases");
    let path = first.hh(&format!("/medications/{}", a.id()));
    assert_eq!(path, second.hh(&format!("/medications/{}", b.id())));
    for _ in 0..3 {
        let read = first.get(&path, &first.owner).await;
        assert_eq!(read.data()["display_name"], "Paracetamol");
        let read = second.get(&path, &second.owner).await;
        assert_eq!(read.data()["display_name"], "Calpol");
    }
}

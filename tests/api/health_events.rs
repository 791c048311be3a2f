use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::paracetamol;

async fn new_person(app: &TestApp, name: &str) -> (i64, String) {
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": name, "date_of_birth": "1950-02-03"}}),
        )
        .await;
    created.assert_status(201);
    let portable = created.data()["portable_id"].as_str().unwrap().to_string();
    (created.id(), portable)
}

async fn new_medication(app: &TestApp, name: &str) -> (i64, String) {
    let mut body = paracetamol();
    body["medication"]["name"] = json!(name);
    body["medication"]["barcode"] = Value::Null;
    let created = app.post(&app.hh("/medications"), &app.owner, body).await;
    created.assert_status(201);
    let portable = created.data()["portable_id"].as_str().unwrap().to_string();
    (created.id(), portable)
}

/// Gives a member a grant on a person at `level`.
async fn grant(app: &TestApp, membership_id: i64, person_id: i64, level: &'static str) {
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            pillbox::household::grants::store::insert(
                conn,
                &pillbox::household::grants::store::NewGrant {
                    household_id,
                    membership_id,
                    person_id,
                    access_level: level,
                    relationship_type: "carer",
                    expires_at: None,
                    created_by_membership_id: None,
                },
            )
        })
        .await
        .unwrap();
}

fn cold(person_id: Value) -> Value {
    json!({"health_event": {
        "person_id": person_id,
        "event_kind": "illness",
        "title": "Heavy cold",
        "started_on": "2026-01-10",
    }})
}

/// `cold` as a whole replacement: the optional attributes sent empty.
fn whole_cold(person_id: Value) -> Value {
    let mut body = cold(person_id);
    for key in ["severity", "notes", "ended_on"] {
        body["health_event"][key] = Value::Null;
    }
    body["health_event"]["medication_ids"] = json!([]);
    body
}

/// (action, person_id) of the HealthEvent change-feed entries for `id`, in order.
async fn feed(app: &TestApp, id: i64) -> Vec<(String, Option<i64>)> {
    app.db
        .read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT action, person_id FROM change_feed
                 WHERE record_type = 'HealthEvent' AND record_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

async fn event_count(app: &TestApp) -> i64 {
    app.db
        .read(|c| Ok(c.query_row("SELECT count(*) FROM health_events", [], |r| r.get(0))?))
        .await
        .unwrap()
}

#[tokio::test]
async fn create_read_update_replace_delete_a_health_event() {
    let app = TestApp::new().await;
    let (grandma, grandma_portable) = new_person(&app, "Grandma").await;
    let (para, para_portable) = new_medication(&app, "Paracetamol").await;
    let (ibu, _) = new_medication(&app, "Ibuprofen").await;

    // The same medication named twice (numeric and portable) is linked once.
    let created = app
        .post(
            &app.hh("/health_events"),
            &app.owner,
            json!({"health_event": {
                "person_id": grandma_portable,
                "event_kind": "suspected_side_effect",
                "severity": "moderate",
                "title": "  Rash after tablets ",
                "notes": "Red patches on both arms",
                "started_on": "2026-02-01",
                "ended_on": "2026-02-04",
                "medication_ids": [ibu, para_portable, para.to_string()],
            }}),
        )
        .await;
    created.assert_status(201);
    let e = created.data().clone();
    let id = created.id();
    let portable = e["portable_id"].as_str().unwrap().to_string();
    assert_eq!(e["person_id"], grandma);
    assert_eq!(e["person_portable_id"], grandma_portable);
    assert_eq!(e["event_kind"], "suspected_side_effect");
    assert_eq!(e["severity"], "moderate");
    assert_eq!(e["title"], "Rash after tablets");
    assert_eq!(e["started_on"], "2026-02-01");
    assert_eq!(e["ended_on"], "2026-02-04");
    assert_eq!(e["medication_ids"], json!([para, ibu]));
    assert_eq!(e["medication_portable_ids"][0], para_portable);
    assert!(!created.etag().is_empty());

    // Numeric and portable ids name the same event.
    let by_portable = app
        .get(&app.hh(&format!("/health_events/{portable}")), &app.owner)
        .await;
    by_portable.assert_status(200);
    assert_eq!(by_portable.data(), &e);
    assert_eq!(by_portable.etag(), created.etag());
    let list = app.get(&app.hh("/health_events"), &app.owner).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 1);
    assert_eq!(list.data()[0], e);

    let patched = app
        .patch(
            &app.hh(&format!("/health_events/{id}")),
            &app.owner,
            json!({"health_event": {"severity": null, "ended_on": null,
                                    "medication_ids": [para], "person_id": grandma}}),
            Some(&created.etag()),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["severity"], Value::Null);
    assert_eq!(patched.data()["ended_on"], Value::Null);
    assert_eq!(patched.data()["medication_ids"], json!([para]));
    assert_eq!(patched.data()["notes"], "Red patches on both arms");
    assert_ne!(patched.etag(), created.etag());

    // A stale ETag changes nothing.
    app.patch(
        &app.hh(&format!("/health_events/{id}")),
        &app.owner,
        json!({"health_event": {"title": "Other"}}),
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    let unchanged = app
        .get(&app.hh(&format!("/health_events/{id}")), &app.owner)
        .await;
    assert_eq!(unchanged.data(), patched.data());
    assert_eq!(unchanged.etag(), patched.etag());

    // PATCH without If-Match is allowed.
    let renamed = app
        .patch(
            &app.hh(&format!("/health_events/{id}")),
            &app.owner,
            json!({"health_event": {"title": "Rash"}}),
            None,
        )
        .await;
    renamed.assert_status(200);
    assert_eq!(renamed.data()["medication_ids"], json!([para]));

    // PUT replaces: every attribute is sent, the optional ones empty.
    let replaced = app
        .put(
            &app.hh(&format!("/health_events/{portable}")),
            &app.owner,
            json!({"health_event": {
                "person_id": grandma_portable,
                "event_kind": "illness",
                "title": "Flu",
                "started_on": "2026-02-02",
                "severity": null,
                "notes": null,
                "ended_on": null,
                "medication_ids": [],
            }}),
            Some(&renamed.etag()),
        )
        .await;
    replaced.assert_status(200);
    let r = replaced.data();
    assert_eq!(r["event_kind"], "illness");
    assert_eq!(r["title"], "Flu");
    assert_eq!(r["notes"], Value::Null);
    assert_eq!(r["severity"], Value::Null);
    assert_eq!(r["ended_on"], Value::Null);
    assert_eq!(r["medication_ids"], json!([]));
    assert_eq!(r["created_at"], e["created_at"]);

    // Delete: a stale If-Match is refused, then the event goes.
    app.delete(
        &app.hh(&format!("/health_events/{id}")),
        &app.owner,
        Some(&created.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
    app.delete(
        &app.hh(&format!("/health_events/{id}")),
        &app.owner,
        Some(&replaced.etag()),
    )
    .await
    .assert_status(204);
    app.get(&app.hh(&format!("/health_events/{id}")), &app.owner)
        .await
        .assert_error(404, "not_found");
    app.patch(
        &app.hh(&format!("/health_events/{id}")),
        &app.owner,
        json!({"health_event": {"title": "Back"}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    app.delete(&app.hh(&format!("/health_events/{id}")), &app.owner, None)
        .await
        .assert_error(404, "not_found");
    let list = app.get(&app.hh("/health_events"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 0);

    // Every change is in the feed with the person; the deletion is the tombstone.
    let entries = feed(&app, id).await;
    let actions: Vec<&str> = entries.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(actions, ["create", "update", "update", "update", "delete"]);
    assert!(entries.iter().all(|(_, person)| *person == Some(grandma)));
    let tombstone: (String, String) = app
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT record_portable_id, action FROM change_feed
                 WHERE record_type = 'HealthEvent' AND action = 'delete' AND person_id = ?1",
                [grandma],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(tombstone, (portable, "delete".to_string()));
}

#[tokio::test]
async fn create_validates_and_names_fields() {
    let app = TestApp::new().await;
    let (grandma, _) = new_person(&app, "Grandma").await;
    let url = app.hh("/health_events");

    let fields = |r: &crate::support::TestResponse| -> Vec<String> {
        let mut keys: Vec<String> = r.body["error"]["errors"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    };

    // Unknown attribute.
    let mut body = cold(json!(grandma));
    body["health_event"]["colour"] = json!("red");
    let r = app.post(&url, &app.owner, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["colour"]);

    // A JSON number where a date belongs.
    let mut body = cold(json!(grandma));
    body["health_event"]["started_on"] = json!(20260110);
    let r = app.post(&url, &app.owner, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["started_on"]);

    // Not a date at all.
    let mut body = cold(json!(grandma));
    body["health_event"]["ended_on"] = json!("2026-02-30");
    let r = app.post(&url, &app.owner, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["ended_on"]);

    // Ended before it started.
    let mut body = cold(json!(grandma));
    body["health_event"]["ended_on"] = json!("2026-01-09");
    let r = app.post(&url, &app.owner, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["ended_on"]);

    // A medication that does not exist (numeric and portable) is "not found".
    for unknown in [json!(999), json!("0192a5b0-0000-7000-8000-000000000000")] {
        let mut body = cold(json!(grandma));
        body["health_event"]["medication_ids"] = json!([unknown]);
        let r = app.post(&url, &app.owner, body).await;
        r.assert_error(404, "not_found");
    }
    let mut body = cold(json!(grandma));
    body["health_event"]["medication_ids"] = Value::Null;
    let r = app.post(&url, &app.owner, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["medication_ids"]);

    // Missing required attributes are all reported together.
    let r = app
        .post(
            &url,
            &app.owner,
            json!({"health_event": {"person_id": grandma}}),
        )
        .await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["event_kind", "started_on", "title"]);
    let r = app
        .post(
            &url,
            &app.owner,
            json!({"health_event": {"event_kind": "illness", "title": "A", "started_on": "2026-01-01"}}),
        )
        .await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["person_id"]);

    // Closed vocabularies, lengths and blanks.
    for (field, value) in [
        ("event_kind", json!("injury")),
        ("event_kind", Value::Null),
        ("severity", json!("fatal")),
        ("title", json!("   ")),
        ("title", json!("x".repeat(201))),
        ("notes", json!("x".repeat(4001))),
        ("started_on", Value::Null),
        ("started_on", json!("1066-10-14")),
        ("person_id", json!("someone")),
        ("person_id", Value::Null),
    ] {
        let mut body = cold(json!(grandma));
        body["health_event"][field] = value.clone();
        let r = app.post(&url, &app.owner, body).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(fields(&r), [field], "{field}={value}");
    }

    // A person who does not exist.
    app.post(&url, &app.owner, cold(json!(999)))
        .await
        .assert_error(404, "not_found");

    assert_eq!(event_count(&app).await, 0, "nothing was created");

    // Notes may be long up to the limit; severity may be null.
    let mut body = cold(json!(grandma));
    body["health_event"]["notes"] = json!("x".repeat(4000));
    body["health_event"]["severity"] = Value::Null;
    body["health_event"]["ended_on"] = json!("2026-01-10");
    app.post(&url, &app.owner, body).await.assert_status(201);
}

#[tokio::test]
async fn updates_validate_and_keep_the_person() {
    let app = TestApp::new().await;
    let (grandma, _) = new_person(&app, "Grandma").await;
    let (grandpa, grandpa_portable) = new_person(&app, "Grandpa").await;
    let created = app
        .post(&app.hh("/health_events"), &app.owner, cold(json!(grandma)))
        .await;
    created.assert_status(201);
    let url = app.hh(&format!("/health_events/{}", created.id()));

    // The person cannot change, on PUT or PATCH, by either id.
    let mut body = whole_cold(json!(grandpa));
    body["health_event"]["title"] = json!("Moved");
    let r = app.put(&url, &app.owner, body, None).await;
    r.assert_error(422, "validation_failed");
    assert!(r.body["error"]["errors"]["person_id"].is_array());
    app.patch(
        &url,
        &app.owner,
        json!({"health_event": {"person_id": grandpa_portable}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");

    // PUT needs the required attributes, person_id included.
    let r = app
        .put(
            &url,
            &app.owner,
            json!({"health_event": {"title": "Only a title"}}),
            None,
        )
        .await;
    r.assert_error(422, "validation_failed");
    for field in ["person_id", "event_kind", "started_on"] {
        assert!(r.body["error"]["errors"][field].is_array(), "{}", r.body);
    }

    // A PATCH that moves the start after the existing end is refused.
    let ended = app
        .patch(
            &url,
            &app.owner,
            json!({"health_event": {"ended_on": "2026-01-12"}}),
            None,
        )
        .await;
    ended.assert_status(200);
    let r = app
        .patch(
            &url,
            &app.owner,
            json!({"health_event": {"started_on": "2026-01-13"}}),
            None,
        )
        .await;
    r.assert_error(422, "validation_failed");
    assert!(r.body["error"]["errors"]["ended_on"].is_array());
    for body in [
        json!({"health_event": {"title": null}}),
        json!({"health_event": {"started_on": 5}}),
        json!({"health_event": {"reason": "x"}}),
        json!({"title": "outside the envelope"}),
    ] {
        app.patch(&url, &app.owner, body, None)
            .await
            .assert_error(422, "validation_failed");
    }
    app.patch(
        &url,
        &app.owner,
        json!({"health_event": {"medication_ids": [12345]}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    let current = app.get(&url, &app.owner).await;
    assert_eq!(
        current.data(),
        ended.data(),
        "refused changes changed nothing"
    );
    assert_eq!(current.data()["person_id"], grandma);
}

#[tokio::test]
async fn access_decides_who_reads_and_writes() {
    let app = TestApp::new().await;
    let (grandma, _) = new_person(&app, "Grandma").await;
    let (grandpa, _) = new_person(&app, "Grandpa").await;
    let grandma_event = app
        .post(&app.hh("/health_events"), &app.owner, cold(json!(grandma)))
        .await
        .id();
    let grandpa_event = app
        .post(&app.hh("/health_events"), &app.owner, cold(json!(grandpa)))
        .await
        .id();

    // A view-only grant reads but cannot write.
    let (viewer_membership, viewer) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    grant(&app, viewer_membership, grandma, "view").await;
    let url = app.hh(&format!("/health_events/{grandma_event}"));
    app.get(&url, &viewer).await.assert_status(200);
    app.post(&app.hh("/health_events"), &viewer, cold(json!(grandma)))
        .await
        .assert_error(403, "forbidden");
    app.patch(&url, &viewer, json!({"health_event": {"title": "X"}}), None)
        .await
        .assert_error(403, "forbidden");
    app.put(&url, &viewer, whole_cold(json!(grandma)), None)
        .await
        .assert_error(403, "forbidden");
    app.delete(&url, &viewer, None)
        .await
        .assert_error(403, "forbidden");

    // Without a grant, the person's events do not exist for the member.
    let other = app.hh(&format!("/health_events/{grandpa_event}"));
    app.get(&other, &viewer)
        .await
        .assert_error(404, "not_found");
    app.post(&app.hh("/health_events"), &viewer, cold(json!(grandpa)))
        .await
        .assert_error(404, "not_found");
    app.patch(
        &other,
        &viewer,
        json!({"health_event": {"title": "X"}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    app.delete(&other, &viewer, None)
        .await
        .assert_error(404, "not_found");
    let list = app.get(&app.hh("/health_events"), &viewer).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 1);
    assert_eq!(list.data()[0]["id"], grandma_event);

    // A record grant (a carer) may log, change and delete events.
    let (carer_membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, carer_membership, grandma, "record").await;
    let logged = app
        .post(&app.hh("/health_events"), &carer, cold(json!(grandma)))
        .await;
    logged.assert_status(201);
    let logged_url = app.hh(&format!("/health_events/{}", logged.id()));
    app.patch(
        &logged_url,
        &carer,
        json!({"health_event": {"severity": "mild"}}),
        Some(&logged.etag()),
    )
    .await
    .assert_status(200);
    app.delete(&logged_url, &carer, None)
        .await
        .assert_status(204);

    // A member reaches their own person through the self grant.
    let (_, member) = app
        .add_member("member@example.org", Role::Member, Some("Max Member"))
        .await;
    let own = app.get(&app.hh("/people"), &member).await.data()[0]["id"]
        .as_i64()
        .unwrap();
    app.post(&app.hh("/health_events"), &member, cold(json!(own)))
        .await
        .assert_status(201);
    let mine = app.get(&app.hh("/health_events"), &member).await;
    assert_eq!(mine.body["meta"]["total_count"], 1);
    assert_eq!(mine.data()[0]["person_id"], own);
}

#[tokio::test]
async fn list_filters_by_person_and_pages_newest_first() {
    let app = TestApp::new().await;
    let (grandma, grandma_portable) = new_person(&app, "Grandma").await;
    let (grandpa, _) = new_person(&app, "Grandpa").await;
    let (para, _) = new_medication(&app, "Paracetamol").await;
    for (person, day) in [(grandma, 3), (grandpa, 5), (grandma, 1), (grandma, 7)] {
        let mut body = cold(json!(person));
        body["health_event"]["started_on"] = json!(format!("2026-03-{day:02}"));
        body["health_event"]["medication_ids"] = json!([para]);
        app.post(&app.hh("/health_events"), &app.owner, body)
            .await
            .assert_status(201);
    }

    let all = app.get(&app.hh("/health_events"), &app.owner).await;
    let starts: Vec<&str> = all
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["started_on"].as_str().unwrap())
        .collect();
    assert_eq!(
        starts,
        ["2026-03-07", "2026-03-05", "2026-03-03", "2026-03-01"]
    );
    // Links come for every item of the page.
    assert!(
        all.data()
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["medication_ids"] == json!([para]))
    );

    for filter in [grandma.to_string(), grandma_portable] {
        let r = app
            .get(
                &app.hh(&format!("/health_events?person_id={filter}")),
                &app.owner,
            )
            .await;
        r.assert_status(200);
        assert_eq!(r.body["meta"]["total_count"], 3);
        assert!(
            r.data()
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["person_id"] == grandma)
        );
    }
    let page = app
        .get(
            &app.hh(&format!(
                "/health_events?person_id={grandma}&page=2&per_page=2"
            )),
            &app.owner,
        )
        .await;
    assert_eq!(
        page.body["meta"],
        json!({"page": 2, "per_page": 2, "total_count": 3})
    );
    assert_eq!(page.data()[0]["started_on"], "2026-03-01");

    app.get(&app.hh("/health_events?person_id=nobody"), &app.owner)
        .await
        .assert_error(422, "validation_failed");
    app.get(&app.hh("/health_events?updated_since=soon"), &app.owner)
        .await
        .assert_error(422, "validation_failed");
    // A filter naming no person of the household is not found (DESIGN: references).
    app.get(&app.hh("/health_events?person_id=999"), &app.owner)
        .await
        .assert_error(404, "not_found");

    let mark = pillbox::domain::Timestamp::now();
    let later = app
        .post(&app.hh("/health_events"), &app.owner, cold(json!(grandpa)))
        .await
        .id();
    let since = app
        .get(
            &app.hh(&format!("/health_events?updated_since={mark}")),
            &app.owner,
        )
        .await;
    assert_eq!(since.body["meta"]["total_count"], 1);
    assert_eq!(since.data()[0]["id"], later);
}

#[tokio::test]
async fn deleted_medications_stay_linked_but_cannot_be_newly_linked() {
    let app = TestApp::new().await;
    let (grandma, _) = new_person(&app, "Grandma").await;
    let (para, _) = new_medication(&app, "Paracetamol").await;
    let (ibu, _) = new_medication(&app, "Ibuprofen").await;
    let mut body = cold(json!(grandma));
    body["health_event"]["medication_ids"] = json!([para]);
    let created = app.post(&app.hh("/health_events"), &app.owner, body).await;
    created.assert_status(201);
    let url = app.hh(&format!("/health_events/{}", created.id()));

    for id in [para, ibu] {
        app.delete(&app.hh(&format!("/medications/{id}")), &app.owner, None)
            .await
            .assert_status(204);
    }
    let kept = app.get(&url, &app.owner).await;
    assert_eq!(kept.data()["medication_ids"], json!([para]));

    // Re-sending the existing link is fine; a deleted medication is not newly linked.
    app.patch(
        &url,
        &app.owner,
        json!({"health_event": {"medication_ids": [para]}}),
        None,
    )
    .await
    .assert_status(200);
    app.patch(
        &url,
        &app.owner,
        json!({"health_event": {"medication_ids": [para, ibu]}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    let mut body = cold(json!(grandma));
    body["health_event"]["medication_ids"] = json!([para]);
    app.post(&app.hh("/health_events"), &app.owner, body)
        .await
        .assert_error(404, "not_found");
}

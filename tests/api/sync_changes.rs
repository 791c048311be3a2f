//! getSyncChanges: the change feed after a cursor, its tombstones, its
//! access filter, its cursors and its pages.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{grant, new_medication, new_person};

/// One page of the feed.
async fn page(app: &TestApp, token: &str, cursor: Option<&str>, limit: Option<u32>) -> Value {
    let mut query = Vec::new();
    if let Some(c) = cursor {
        query.push(format!("cursor={c}"));
    }
    if let Some(l) = limit {
        query.push(format!("limit={l}"));
    }
    let path = app.hh(&format!("/sync/changes?{}", query.join("&")));
    let response = app.get(&path, token).await;
    response.assert_status(200);
    response.data().clone()
}

/// Every entry after `cursor`: (changes, tombstones, final next_cursor).
async fn read_all(
    app: &TestApp,
    token: &str,
    cursor: Option<&str>,
) -> (Vec<Value>, Vec<Value>, String) {
    let mut cursor = cursor.map(str::to_string);
    let mut changes = Vec::new();
    let mut tombstones = Vec::new();
    loop {
        let data = page(app, token, cursor.as_deref(), None).await;
        changes.extend(data["changes"].as_array().unwrap().iter().cloned());
        tombstones.extend(data["tombstones"].as_array().unwrap().iter().cloned());
        cursor = Some(data["next_cursor"].as_str().unwrap().to_string());
        if !data["has_more"].as_bool().unwrap() {
            return (changes, tombstones, cursor.unwrap());
        }
    }
}

/// (record_type, action, record_portable_id) of each change.
fn summary(changes: &[Value]) -> Vec<(String, String, String)> {
    changes
        .iter()
        .map(|c| {
            (
                c["record_type"].as_str().unwrap().to_string(),
                c["action"].as_str().unwrap().to_string(),
                c["record_portable_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn ids(entries: &[Value]) -> Vec<i64> {
    entries.iter().map(|e| e["id"].as_i64().unwrap()).collect()
}

fn cursor_of(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

#[tokio::test]
async fn writes_come_back_in_order_with_a_next_cursor() {
    let app = TestApp::new().await;
    let (_, _, start) = read_all(&app, &app.owner, None).await;

    let location = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Kitchen"}}),
        )
        .await;
    location.assert_status(201);
    let location_id = location.id();
    let location_portable = location.data()["portable_id"].as_str().unwrap().to_string();
    let updated = app
        .patch(
            &app.hh(&format!("/locations/{location_id}")),
            &app.owner,
            json!({"location": {"name": "Bathroom"}}),
            Some(&location.etag()),
        )
        .await;
    updated.assert_status(200);
    let ada = new_person(&app, "Ada").await;
    app.delete(
        &app.hh(&format!("/locations/{location_id}")),
        &app.owner,
        Some(&updated.etag()),
    )
    .await
    .assert_status(204);

    let data = page(&app, &app.owner, Some(&start), None).await;
    assert_eq!(data["has_more"], false);
    let changes = data["changes"].as_array().unwrap();
    assert_eq!(
        summary(changes),
        vec![
            (
                "Location".into(),
                "create".into(),
                location_portable.clone()
            ),
            (
                "Location".into(),
                "update".into(),
                location_portable.clone()
            ),
            ("Person".into(), "create".into(), ada.portable.clone()),
        ]
    );
    assert_eq!(changes[0]["record_id"], json!(location_id.to_string()));
    assert_eq!(changes[0]["metadata"], json!({"person_portable_id": null}));
    assert_eq!(
        changes[2]["metadata"],
        json!({"person_portable_id": ada.portable})
    );
    let tombstones = data["tombstones"].as_array().unwrap();
    assert_eq!(tombstones.len(), 1);
    assert_eq!(tombstones[0]["record_type"], "Location");
    assert_eq!(
        tombstones[0]["record_portable_id"],
        json!(location_portable)
    );
    assert_eq!(tombstones[0]["person_portable_id"], Value::Null);
    // Ascending ids across both lists, the tombstone last.
    let change_ids = ids(changes);
    assert!(change_ids.windows(2).all(|w| w[0] < w[1]));
    assert!(tombstones[0]["id"].as_i64().unwrap() > *change_ids.last().unwrap());

    // From next_cursor: nothing new, and the cursor stays put.
    let next = data["next_cursor"].as_str().unwrap();
    assert_ne!(next, start);
    let again = page(&app, &app.owner, Some(next), None).await;
    assert_eq!(again["changes"], json!([]));
    assert_eq!(again["tombstones"], json!([]));
    assert_eq!(again["has_more"], false);
    assert_eq!(again["next_cursor"], json!(next));

    // A later write shows up from that cursor, alone.
    new_person(&app, "Bea").await;
    let later = page(&app, &app.owner, Some(next), None).await;
    assert_eq!(later["changes"].as_array().unwrap().len(), 1);
    assert_eq!(later["changes"][0]["record_type"], "Person");
}

#[tokio::test]
async fn a_retired_schedule_is_an_update_and_a_tombstone() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let (_, _, start) = read_all(&app, &app.owner, None).await;
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {
                "person_id": ada.id,
                "medication_id": med.id,
                "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]},
                "start_date": "2026-03-01",
            }}),
        )
        .await;
    created.assert_status(201);
    let portable = created.data()["portable_id"].as_str().unwrap().to_string();
    app.delete(
        &app.hh(&format!("/schedules/{}", created.id())),
        &app.owner,
        Some(&created.etag()),
    )
    .await
    .assert_status(204);

    let (changes, tombstones, _) = read_all(&app, &app.owner, Some(&start)).await;
    assert_eq!(
        summary(&changes),
        vec![
            ("Schedule".into(), "create".into(), portable.clone()),
            ("Schedule".into(), "update".into(), portable.clone()),
        ]
    );
    assert_eq!(tombstones.len(), 1);
    assert_eq!(tombstones[0]["record_type"], "Schedule");
    assert_eq!(tombstones[0]["record_portable_id"], json!(portable));
    assert_eq!(tombstones[0]["person_portable_id"], json!(ada.portable));
    assert!(tombstones[0]["id"].as_i64().unwrap() > changes[1]["id"].as_i64().unwrap());
}

#[tokio::test]
async fn a_view_only_member_sees_only_people_they_may_view() {
    let app = TestApp::new().await;
    let (membership, member) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    let ada = new_person(&app, "Ada").await;
    let bea = new_person(&app, "Bea").await;
    grant(&app, membership, bea.id, "view").await;
    let med = new_medication(&app, "Paracetamol").await;
    for person in [&ada, &bea] {
        let created = app
            .post(
                &app.hh("/schedules"),
                &app.owner,
                json!({"schedule": {
                    "person_id": person.id,
                    "medication_id": med.id,
                    "schedule_type": "prn",
                    "start_date": "2026-03-01",
                }}),
            )
            .await;
        created.assert_status(201);
        app.delete(
            &app.hh(&format!("/schedules/{}", created.id())),
            &app.owner,
            Some(&created.etag()),
        )
        .await
        .assert_status(204);
    }

    let (changes, tombstones, _) = read_all(&app, &member, None).await;
    let seen: BTreeSet<String> = changes
        .iter()
        .chain(tombstones.iter())
        .map(|e| e["record_portable_id"].as_str().unwrap().to_string())
        .collect();
    assert!(seen.contains(&bea.portable), "Bea is granted");
    assert!(
        seen.contains(&med.portable),
        "medications are household-wide"
    );
    assert!(!seen.contains(&ada.portable), "Ada is not granted");
    for entry in changes.iter() {
        assert_ne!(entry["metadata"]["person_portable_id"], json!(ada.portable));
    }
    assert_eq!(tombstones.len(), 1, "only Bea's schedule: {tombstones:?}");
    assert_eq!(tombstones[0]["person_portable_id"], json!(bea.portable));

    // The owner sees both tombstones.
    let (_, owner_tombstones, _) = read_all(&app, &app.owner, None).await;
    assert_eq!(owner_tombstones.len(), 2);

    // Once the grant is gone, Bea's entries go too.
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_access_grants SET revoked_at = ?2
                 WHERE membership_id = ?1 AND household_id = ?3",
                rusqlite::params![membership, pillbox::domain::Timestamp::now(), household_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let (changes, tombstones, _) = read_all(&app, &member, None).await;
    assert!(tombstones.is_empty());
    assert!(
        changes
            .iter()
            .all(|c| c["metadata"]["person_portable_id"].is_null())
    );
}

#[tokio::test]
async fn foreign_garbage_and_future_cursors_and_bad_limits_are_422() {
    let app = TestApp::new().await;
    let (_, _, current) = read_all(&app, &app.owner, None).await;
    let future = cursor_of(&format!("v1:{}:999999999", app.household_id));
    for cursor in [
        cursor_of("v1:999:1"),
        "not-a-cursor".to_string(),
        "AAAA".to_string(),
        cursor_of("v2:1:1"),
        future,
        // An empty cursor is not "from the beginning" (leave it out for that).
        String::new(),
    ] {
        let path = app.hh(&format!("/sync/changes?cursor={cursor}"));
        let response = app.get(&path, &app.owner).await;
        response.assert_error(422, "validation_failed");
        assert!(
            response.body["error"]["errors"]["cursor"].is_array(),
            "{}",
            response.body
        );
    }
    for limit in ["0", "1001", "ten", "-1"] {
        let path = app.hh(&format!("/sync/changes?limit={limit}"));
        let response = app.get(&path, &app.owner).await;
        response.assert_status(422);
        assert!(response.body["error"]["errors"]["limit"].is_array());
    }
    // The household's own current cursor is fine.
    let path = app.hh(&format!("/sync/changes?cursor={current}"));
    app.get(&path, &app.owner).await.assert_status(200);
}

#[tokio::test]
async fn ten_thousand_entries_page_through_without_gaps_or_duplicates() {
    let app = TestApp::new().await;
    let household_id = app.household_id;
    let expected: Vec<i64> = app
        .db
        .write(move |conn| {
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
                 INSERT INTO change_feed
                   (household_id, record_type, record_id, record_portable_id, action,
                    person_id, occurred_at)
                 SELECT ?1, 'Medication', 100000 + i,
                        printf('00000000-0000-4000-8000-%012d', i),
                        CASE WHEN i % 10 = 0 THEN 'delete' ELSE 'update' END, NULL, ?2
                 FROM n",
                rusqlite::params![household_id, pillbox::domain::Timestamp::now()],
            )?;
            let mut stmt =
                conn.prepare("SELECT seq FROM change_feed WHERE household_id = ?1 ORDER BY seq")?;
            let seqs = stmt
                .query_map([household_id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()?;
            Ok(seqs)
        })
        .await
        .unwrap();
    assert!(expected.len() >= 10_000);

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let data = page(&app, &app.owner, cursor.as_deref(), Some(1000)).await;
        pages += 1;
        let changes = data["changes"].as_array().unwrap();
        let tombstones = data["tombstones"].as_array().unwrap();
        assert!(changes.len() + tombstones.len() <= 1000);
        let mut page_ids = ids(changes);
        page_ids.extend(ids(tombstones));
        page_ids.sort_unstable();
        seen.extend(page_ids);
        cursor = Some(data["next_cursor"].as_str().unwrap().to_string());
        if !data["has_more"].as_bool().unwrap() {
            break;
        }
        assert!(pages < 100, "the feed does not end");
    }
    assert_eq!(seen, expected, "every entry once, in order");
    assert!(pages >= 10);
    let unique: BTreeSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len());
}

#[tokio::test]
async fn hidden_entries_are_passed_over_in_bounded_scans() {
    let app = TestApp::new().await;
    let (_, member) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    let ada = new_person(&app, "Ada").await;
    let household_id = app.household_id;
    let ada_id = ada.id;
    app.db
        .write(move |conn| {
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000)
                 INSERT INTO change_feed
                   (household_id, record_type, record_id, record_portable_id, action,
                    person_id, occurred_at)
                 SELECT ?1, 'Person', ?2, printf('00000000-0000-4000-8000-%012d', i),
                        'update', ?2, ?3
                 FROM n",
                rusqlite::params![household_id, ada_id, pillbox::domain::Timestamp::now()],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let med = new_medication(&app, "Paracetamol").await;

    // The first page scans a bounded slice of Ada's entries and moves on.
    let first = page(&app, &member, None, Some(10)).await;
    assert_eq!(first["has_more"], true);
    let (changes, tombstones, _) = read_all(&app, &member, None).await;
    assert!(tombstones.is_empty());
    let seen: Vec<&str> = changes
        .iter()
        .map(|c| c["record_portable_id"].as_str().unwrap())
        .collect();
    assert!(seen.contains(&med.portable.as_str()));
    assert!(!seen.contains(&ada.portable.as_str()));
    assert!(changes.iter().all(|c| c["record_type"] != "Person"));
}

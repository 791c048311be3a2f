use pillbox::auth::Role;
use pillbox::care::notification_preferences::slots::{self, SlotTimes};
use serde_json::{Value, json};

use crate::support::TestApp;

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.db
        .read(move |c| Ok(c.query_row(sql, [], |r| r.get(0))?))
        .await
        .unwrap()
}

async fn own_person_id(app: &TestApp, token: &str) -> i64 {
    let people = app.get(&app.hh("/people"), token).await;
    people
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Olive Owner" || p["name"] == "Max Member")
        .expect("a linked person")["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn defaults_are_answered_without_writing_anything() {
    let app = TestApp::new().await;
    let olive = own_person_id(&app, &app.owner).await;
    let got = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    got.assert_status(200);
    assert_eq!(
        got.data(),
        &json!({
            "id": null,
            "portable_id": null,
            "person_id": olive,
            "person_portable_id": got.data()["person_portable_id"],
            "enabled": true,
            "dose_due_enabled": true,
            "missed_dose_enabled": true,
            "low_stock_enabled": true,
            "private_text_enabled": false,
            "morning_time": "08:00:00",
            "afternoon_time": "13:00:00",
            "evening_time": "18:00:00",
            "night_time": "22:00:00",
            "updated_at": null,
        })
    );
    assert!(got.header("etag").is_none(), "nothing saved, no version");
    assert_eq!(
        count(&app, "SELECT count(*) FROM notification_preferences").await,
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM change_feed WHERE record_type = 'NotificationPreference'"
        )
        .await,
        0
    );
    let person = app
        .get(&app.hh(&format!("/people/{olive}")), &app.owner)
        .await;
    assert_eq!(person.data()["notification_preference_id"], Value::Null);
    let slots = app
        .db
        .read(move |c| slots::slot_times(c, olive))
        .await
        .unwrap();
    assert_eq!(slots, SlotTimes::DEFAULT);
}

#[tokio::test]
async fn first_patch_creates_then_updates_with_if_match() {
    let app = TestApp::new().await;
    let olive = own_person_id(&app, &app.owner).await;
    let person_before = app
        .get(&app.hh(&format!("/people/{olive}")), &app.owner)
        .await;
    let url = app.hh("/notification_preference");

    // With no saved version, any If-Match is stale.
    app.patch(
        &url,
        &app.owner,
        json!({"notification_preference": {"enabled": false}}),
        Some("\"whatever.1\""),
    )
    .await
    .assert_error(409, "edit_conflict");
    assert_eq!(
        count(&app, "SELECT count(*) FROM notification_preferences").await,
        0
    );

    let created = app
        .patch(
            &url,
            &app.owner,
            json!({"notification_preference": {
                "morning_time": "07:30",
                "night_time": null,
                "private_text_enabled": true,
            }}),
            None,
        )
        .await;
    created.assert_status(200);
    let p = created.data().clone();
    let id = p["id"].as_i64().expect("saved preferences have an id");
    assert_eq!(p["person_id"], olive);
    assert_eq!(p["morning_time"], "07:30:00");
    assert_eq!(p["afternoon_time"], "13:00:00");
    assert_eq!(p["night_time"], Value::Null);
    assert_eq!(p["private_text_enabled"], true);
    assert_eq!(p["enabled"], true);
    assert!(p["updated_at"].is_string());
    let etag = created.etag();
    assert_eq!(
        count(&app, "SELECT count(*) FROM notification_preferences").await,
        1
    );

    // Reads answer the saved row, with the same version.
    let got = app.get(&url, &app.owner).await;
    assert_eq!(got.data(), &p);
    assert_eq!(got.etag(), etag);

    // The person now names its preferences (and has a new version).
    let person = app
        .get(&app.hh(&format!("/people/{olive}")), &app.owner)
        .await;
    assert_eq!(person.data()["notification_preference_id"], id);
    assert_eq!(
        person.data()["notification_preference_portable_id"],
        p["portable_id"]
    );
    assert_ne!(person.etag(), person_before.etag());
    let listed = app.get(&app.hh("/people"), &app.owner).await;
    let listed_olive = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == olive)
        .unwrap()
        .clone();
    assert_eq!(listed_olive["notification_preference_id"], id);

    // Schedules read the slot times.
    let slots = app
        .db
        .read(move |c| slots::slot_times(c, olive))
        .await
        .unwrap();
    assert_eq!(
        slots.morning,
        Some(jiff::civil::Time::constant(7, 30, 0, 0))
    );
    assert_eq!(slots.night, None);
    assert_eq!(slots.slot("afternoon"), SlotTimes::DEFAULT.afternoon);

    // A stale ETag changes nothing; the current one does.
    let updated = app
        .patch(
            &url,
            &app.owner,
            json!({"notification_preference": {"low_stock_enabled": false, "evening_time": "19:05:30"}}),
            Some(&etag),
        )
        .await;
    updated.assert_status(200);
    assert_eq!(updated.data()["low_stock_enabled"], false);
    assert_eq!(updated.data()["evening_time"], "19:05:30");
    assert_eq!(updated.data()["morning_time"], "07:30:00");
    assert_eq!(updated.data()["id"], id);
    app.patch(
        &url,
        &app.owner,
        json!({"notification_preference": {"enabled": false}}),
        Some(&etag),
    )
    .await
    .assert_error(409, "edit_conflict");
    let current = app.get(&url, &app.owner).await;
    assert_eq!(current.data(), updated.data());
    assert_eq!(current.etag(), updated.etag());

    // One create, then one update, each with the person.
    let feed: Vec<(String, i64)> = app
        .db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT action, person_id FROM change_feed
                 WHERE record_type = 'NotificationPreference' ORDER BY seq",
            )?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    assert_eq!(
        feed,
        [("create".to_string(), olive), ("update".to_string(), olive)]
    );
}

#[tokio::test]
async fn put_needs_every_flag_and_every_slot_time() {
    let app = TestApp::new().await;
    let url = app.hh("/notification_preference");
    let r = app
        .put(
            &url,
            &app.owner,
            json!({"notification_preference": {"enabled": true, "morning_time": "06:00"}}),
            None,
        )
        .await;
    r.assert_error(422, "validation_failed");
    // A replace names every attribute it lacks: the flags and the slot
    // times, which are never silently cleared.
    for flag in [
        "dose_due_enabled",
        "missed_dose_enabled",
        "low_stock_enabled",
        "private_text_enabled",
        "afternoon_time",
        "evening_time",
        "night_time",
    ] {
        assert!(r.body["error"]["errors"][flag].is_array(), "{}", r.body);
    }
    assert_eq!(
        count(&app, "SELECT count(*) FROM notification_preferences").await,
        0
    );

    let replaced = app
        .put(
            &url,
            &app.owner,
            json!({"notification_preference": {
                "enabled": true,
                "dose_due_enabled": false,
                "missed_dose_enabled": true,
                "low_stock_enabled": false,
                "private_text_enabled": false,
                "morning_time": "06:00",
                "afternoon_time": null,
                "evening_time": null,
                "night_time": null,
            }}),
            None,
        )
        .await;
    replaced.assert_status(200);
    let p = replaced.data();
    assert_eq!(p["dose_due_enabled"], false);
    assert_eq!(p["morning_time"], "06:00:00");
    for slot in ["afternoon_time", "evening_time", "night_time"] {
        assert_eq!(p[slot], Value::Null, "{slot}");
    }
    let again = app
        .put(
            &url,
            &app.owner,
            json!({"notification_preference": {
                "enabled": false,
                "dose_due_enabled": true,
                "missed_dose_enabled": true,
                "low_stock_enabled": true,
                "private_text_enabled": true,
                "morning_time": null,
                "afternoon_time": null,
                "evening_time": null,
                "night_time": "23:00:00",
            }}),
            Some(&replaced.etag()),
        )
        .await;
    again.assert_status(200);
    assert_eq!(again.data()["morning_time"], Value::Null);
    assert_eq!(again.data()["night_time"], "23:00:00");
    assert_eq!(again.data()["id"], replaced.data()["id"]);
    app.put(
        &url,
        &app.owner,
        json!({"notification_preference": {
            "enabled": true, "dose_due_enabled": true, "missed_dose_enabled": true,
            "low_stock_enabled": true, "private_text_enabled": true,
            "morning_time": null, "afternoon_time": null, "evening_time": null, "night_time": null,
        }}),
        Some(&replaced.etag()),
    )
    .await
    .assert_error(409, "edit_conflict");
}

#[tokio::test]
async fn bad_values_are_refused() {
    let app = TestApp::new().await;
    let url = app.hh("/notification_preference");
    for (field, value) in [
        ("morning_time", json!("24:00")),
        ("morning_time", json!("7:30")),
        ("afternoon_time", json!("13:60")),
        ("evening_time", json!("18:00:60")),
        ("night_time", json!("10pm")),
        ("night_time", json!(2200)),
        ("enabled", Value::Null),
        ("enabled", json!("yes")),
        ("colour", json!("red")),
    ] {
        let r = app
            .patch(
                &url,
                &app.owner,
                json!({"notification_preference": {field: value}}),
                None,
            )
            .await;
        r.assert_error(422, "validation_failed");
        assert!(
            r.body["error"]["errors"][field].is_array(),
            "{field}={value}: {}",
            r.body
        );
    }
    app.patch(&url, &app.owner, json!({"enabled": false}), None)
        .await
        .assert_error(422, "validation_failed");
    assert_eq!(
        count(&app, "SELECT count(*) FROM notification_preferences").await,
        0
    );
}

#[tokio::test]
async fn preferences_belong_to_the_members_own_person() {
    let app = TestApp::new().await;
    let url = app.hh("/notification_preference");

    // A member without a linked person has none.
    let (_, unlinked) = app
        .add_member("unlinked@example.org", Role::Member, None)
        .await;
    app.get(&url, &unlinked)
        .await
        .assert_error(404, "not_found");
    app.patch(
        &url,
        &unlinked,
        json!({"notification_preference": {"enabled": false}}),
        None,
    )
    .await
    .assert_error(404, "not_found");

    // A member with a linked person reads and writes their own.
    let (membership_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Max Member"))
        .await;
    let max = own_person_id(&app, &member).await;
    let got = app.get(&url, &member).await;
    got.assert_status(200);
    assert_eq!(got.data()["person_id"], max);
    let saved = app
        .patch(
            &url,
            &member,
            json!({"notification_preference": {"dose_due_enabled": false}}),
            None,
        )
        .await;
    saved.assert_status(200);
    assert_eq!(saved.data()["person_id"], max);
    // The owner's preferences are untouched.
    let owners = app.get(&url, &app.owner).await;
    assert_eq!(owners.data()["id"], Value::Null);
    assert_eq!(owners.data()["dose_due_enabled"], true);

    // Writing needs manage access to that person; view still reads.
    app.db
        .write(move |c| {
            c.execute(
                "UPDATE person_access_grants SET access_level = 'view' WHERE membership_id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&url, &member).await.assert_status(200);
    app.patch(
        &url,
        &member,
        json!({"notification_preference": {"enabled": false}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    let after = app.get(&url, &member).await;
    assert_eq!(after.data(), saved.data());
}

use pillbox::auth::Role;
use serde_json::json;

use crate::support::TestApp;

fn new_person(name: &str, dob: &str) -> serde_json::Value {
    json!({"person": {"name": name, "date_of_birth": dob}})
}

#[tokio::test]
async fn create_get_list_update_a_person() {
    let app = TestApp::new().await;
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("Ada", "2015-03-01"),
        )
        .await;
    created.assert_status(201);
    let person = created.data().clone();
    assert_eq!(person["name"], "Ada");
    assert_eq!(person["person_type"], "minor");
    assert_eq!(person["has_capacity"], false);
    assert!(person["age"].as_i64().unwrap() >= 11);
    assert_eq!(person["location_ids"], json!([]));
    let etag = created.etag();

    let id = created.id();
    let got = app.get(&app.hh(&format!("/people/{id}")), &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.etag(), etag);
    assert_eq!(got.data(), &person);

    let list = app.get(&app.hh("/people"), &app.owner).await;
    list.assert_status(200);
    // The owner's own person from set-up, then Ada.
    assert_eq!(
        list.body["meta"],
        json!({"page": 1, "per_page": 20, "total_count": 2})
    );

    let updated = app
        .patch(
            &app.hh(&format!("/people/{id}")),
            &app.owner,
            json!({"person": {"email": "ada@example.org"}}),
            Some(&etag),
        )
        .await;
    updated.assert_status(200);
    assert_eq!(updated.data()["email"], "ada@example.org");
    assert_eq!(updated.data()["name"], "Ada");
    assert_ne!(updated.etag(), etag);

    // The old ETag is stale now: 409 and nothing changes.
    let stale = app
        .put(
            &app.hh(&format!("/people/{id}")),
            &app.owner,
            json!({"person": {"name": "Changed"}}),
            Some(&etag),
        )
        .await;
    stale.assert_error(409, "edit_conflict");
    let again = app.get(&app.hh(&format!("/people/{id}")), &app.owner).await;
    assert_eq!(again.data()["name"], "Ada");

    // PUT without If-Match is accepted (If-Match is optional for people).
    let put = app
        .put(
            &app.hh(&format!("/people/{id}")),
            &app.owner,
            json!({"person": {"email": null}}),
            None,
        )
        .await;
    put.assert_status(200);
    assert_eq!(put.data()["email"], serde_json::Value::Null);
}

#[tokio::test]
async fn create_validates_and_names_fields() {
    let app = TestApp::new().await;
    let missing = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "No birthday"}}),
        )
        .await;
    missing.assert_error(422, "validation_failed");
    assert!(missing.body["error"]["errors"]["date_of_birth"].is_array());

    let unknown = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "A", "date_of_birth": "2000-01-01", "colour": "red"}}),
        )
        .await;
    unknown.assert_error(422, "validation_failed");
    assert!(unknown.body["error"]["errors"]["colour"].is_array());

    let bad_date = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("A", "2000-02-30"),
        )
        .await;
    bad_date.assert_error(422, "validation_failed");
    assert!(bad_date.body["error"]["errors"]["date_of_birth"].is_array());

    let future = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("A", "2999-01-01"),
        )
        .await;
    future.assert_error(422, "validation_failed");

    let blank = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("  ", "2000-01-01"),
        )
        .await;
    blank.assert_error(422, "validation_failed");
    assert!(blank.body["error"]["errors"]["name"].is_array());

    let unwrapped = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"name": "A", "date_of_birth": "2000-01-01"}),
        )
        .await;
    unwrapped.assert_error(422, "validation_failed");

    let null_dob = app
        .patch(
            &app.hh("/people/1"),
            &app.owner,
            json!({"person": {"date_of_birth": null}}),
            None,
        )
        .await;
    null_dob.assert_error(422, "validation_failed");

    // Nothing was created by any of these.
    let list = app.get(&app.hh("/people"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
}

#[tokio::test]
async fn members_see_only_people_they_hold_grants_on() {
    let app = TestApp::new().await;
    let grandma = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("Grandma", "1940-05-05"),
        )
        .await
        .id();
    let (_, member) = app
        .add_member("member@example.org", Role::Member, Some("Max Member"))
        .await;

    // The member sees only their own person (self grant from set-up).
    let list = app.get(&app.hh("/people"), &member).await;
    list.assert_status(200);
    let names: Vec<&str> = list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Max Member"]);
    app.get(&app.hh(&format!("/people/{grandma}")), &member)
        .await
        .assert_error(404, "not_found");
    app.patch(
        &app.hh(&format!("/people/{grandma}")),
        &member,
        json!({"person": {"name": "X"}}),
        None,
    )
    .await
    .assert_error(404, "not_found");

    // A person the member creates is theirs to manage.
    let child = app
        .post(&app.hh("/people"), &member, new_person("Kid", "2019-09-09"))
        .await;
    child.assert_status(201);
    let child_id = child.id();
    app.patch(
        &app.hh(&format!("/people/{child_id}")),
        &member,
        json!({"person": {"name": "Kiddo"}}),
        None,
    )
    .await
    .assert_status(200);
    let list = app.get(&app.hh("/people"), &member).await;
    assert_eq!(list.body["meta"]["total_count"], 2);
}

#[tokio::test]
async fn view_only_grant_cannot_write() {
    let app = TestApp::new().await;
    let grandma = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("Grandma", "1940-05-05"),
        )
        .await
        .id();
    let (membership_id, viewer) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            pillbox::household::grants::store::insert(
                conn,
                &pillbox::household::grants::store::NewGrant {
                    household_id,
                    membership_id,
                    person_id: grandma,
                    access_level: "view",
                    relationship_type: "carer",
                    expires_at: None,
                    created_by_membership_id: None,
                },
            )
        })
        .await
        .unwrap();
    app.get(&app.hh(&format!("/people/{grandma}")), &viewer)
        .await
        .assert_status(200);
    app.patch(
        &app.hh(&format!("/people/{grandma}")),
        &viewer,
        json!({"person": {"name": "X"}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    let got = app
        .get(&app.hh(&format!("/people/{grandma}")), &viewer)
        .await;
    assert_eq!(got.data()["name"], "Grandma");
}

#[tokio::test]
async fn pagination_and_updated_since() {
    let app = TestApp::new().await;
    for i in 0..25 {
        app.post(
            &app.hh("/people"),
            &app.owner,
            new_person(&format!("P{i:02}"), "1990-01-01"),
        )
        .await
        .assert_status(201);
    }
    let page2 = app
        .get(&app.hh("/people?page=2&per_page=10"), &app.owner)
        .await;
    page2.assert_status(200);
    assert_eq!(
        page2.body["meta"],
        json!({"page": 2, "per_page": 10, "total_count": 26})
    );
    assert_eq!(page2.data().as_array().unwrap().len(), 10);
    let last = app
        .get(&app.hh("/people?page=3&per_page=10"), &app.owner)
        .await;
    assert_eq!(last.data().as_array().unwrap().len(), 6);

    for bad in [
        "per_page=0",
        "per_page=101",
        "page=0",
        "page=abc",
        "per_page=-1",
    ] {
        let r = app
            .get(&app.hh(&format!("/people?{bad}")), &app.owner)
            .await;
        r.assert_error(422, "validation_failed");
    }
    app.get(&app.hh("/people?updated_since=yesterday"), &app.owner)
        .await
        .assert_error(422, "validation_failed");

    let mark = pillbox::domain::Timestamp::now();
    let later = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("Later", "1990-01-01"),
        )
        .await
        .id();
    let since = app
        .get(
            &app.hh(&format!("/people?updated_since={mark}")),
            &app.owner,
        )
        .await;
    let ids: Vec<i64> = since
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [later]);
}

#[tokio::test]
async fn current_profile_shows_account_membership_and_person() {
    let app = TestApp::new().await;
    let me = app.get(&app.hh("/me"), &app.owner).await;
    me.assert_status(200);
    assert_eq!(me.data()["account"]["email"], "owner@example.org");
    assert_eq!(me.data()["membership"]["role"], "owner");
    assert_eq!(me.data()["person"]["name"], "Olive Owner");
    let (_, member) = app
        .add_member("nobody@example.org", Role::Member, None)
        .await;
    let me = app.get(&app.hh("/me"), &member).await;
    assert_eq!(me.data()["person"], serde_json::Value::Null);
    assert_eq!(me.data()["membership"]["role"], "member");
}

/// The name limit is stated once (the bounded text type): the 422 a longer
/// name gets and the served schema's maxLength both come from it, and
/// nothing is written.
#[tokio::test]
async fn a_person_name_limit_is_one_rule_for_the_422_and_the_schema() {
    let app = TestApp::new().await;
    let doc = app.document();
    let attributes = &doc["components"]["schemas"]["PersonAttributes"]["properties"];
    assert_eq!(attributes["name"]["maxLength"], 200);
    assert_eq!(attributes["email"]["maxLength"], 254);
    assert_eq!(
        doc["components"]["schemas"]["PersonCreateRequest"]["properties"]["person"]["required"],
        json!(["name", "date_of_birth"])
    );

    let before = app.get(&app.hh("/people"), &app.owner).await;
    let long = "x".repeat(201);
    let refused = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person(&long, "2015-03-01"),
        )
        .await;
    refused.assert_status(422);
    assert_eq!(
        refused.body["error"]["errors"]["name"],
        json!(["must be at most 200 characters"])
    );
    assert!(!refused.body.to_string().contains(&long));
    let blank = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person("  ", "2015-03-01"),
        )
        .await;
    blank.assert_status(422);
    assert_eq!(
        blank.body["error"]["errors"]["name"],
        json!(["must not be blank"])
    );
    let after = app.get(&app.hh("/people"), &app.owner).await;
    assert_eq!(after.body["meta"], before.body["meta"]);

    let at_limit = app
        .post(
            &app.hh("/people"),
            &app.owner,
            new_person(&"x".repeat(200), "2015-03-01"),
        )
        .await;
    at_limit.assert_status(201);
}

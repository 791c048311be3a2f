//! Records many tests start from, made through the API as a client would:
//! people, medications, a member who keeps the stock, grants; and what the
//! change feed says of one record.

use pillbox::auth::Role;
use serde_json::{Value, json};

use super::TestApp;

/// A numeric id and a portable id of one record.
#[derive(Clone)]
pub struct Ids {
    pub id: i64,
    pub portable: String,
}

impl Ids {
    pub fn of(data: &Value) -> Ids {
        Ids {
            id: data["id"].as_i64().unwrap(),
            portable: data["portable_id"].as_str().unwrap().to_string(),
        }
    }
}

pub async fn new_person(app: &TestApp, name: &str) -> Ids {
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": name, "date_of_birth": "1950-02-03"}}),
        )
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// Paracetamol: dose 1 tablet, default schedule type prn.
pub async fn new_medication(app: &TestApp, name: &str) -> Ids {
    let mut body = paracetamol();
    body["medication"]["name"] = json!(name);
    body["medication"]["barcode"] = Value::Null;
    let created = app.post(&app.hh("/medications"), &app.owner, body).await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// Gives `membership_id` a live grant of `level` on `person_id`, replacing
/// any live one.
pub async fn grant(app: &TestApp, membership_id: i64, person_id: i64, level: &'static str) {
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            conn.execute(
                "DELETE FROM person_access_grants WHERE membership_id = ?1 AND person_id = ?2",
                [membership_id, person_id],
            )?;
            conn.execute(
                "INSERT INTO person_access_grants
                   (household_id, membership_id, person_id, access_level, relationship_type,
                    created_at)
                 VALUES (?1, ?2, ?3, ?4, 'carer', ?5)",
                rusqlite::params![
                    household_id,
                    membership_id,
                    person_id,
                    level,
                    pillbox::domain::Timestamp::now()
                ],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

/// (action, person_id) of the change-feed entries of one record, in order.
pub async fn feed(app: &TestApp, record_type: &'static str, id: i64) -> Vec<(String, Option<i64>)> {
    app.db
        .read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT action, person_id FROM change_feed
                 WHERE record_type = ?1 AND record_id = ?2 ORDER BY seq",
            )?;
            let rows = stmt
                .query_map(rusqlite::params![record_type, id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

pub fn paracetamol() -> Value {
    json!({"medication": {
        "name": "Paracetamol 500mg tablets",
        "friendly_name": "Paracetamol",
        "category": "pain relief",
        "dose_amount": "1",
        "dose_unit": "tablet",
        "default_schedule_type": "prn",
        "current_supply": "10.5",
        "reorder_threshold": "4",
        "barcode": "5012345678900",
        "dmd_code": "42109611000001109",
        "dmd_system": "https://dmd.nhs.uk",
        "dmd_concept_class": "AMP",
    }})
}

/// A member holding the inventory management permission.
pub async fn stock_keeper(app: &TestApp) -> String {
    let (membership_id, token) = app
        .add_member("stock@example.org", Role::Member, None)
        .await;
    app.db
        .write(move |c| {
            c.execute(
                "UPDATE memberships SET inventory_management = 1 WHERE id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    token
}

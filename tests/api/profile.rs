//! The signed-in member's profile and avatar.

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use pillbox::auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{Contract, TestApp, TestResponse};

const FIVE_MIB: usize = 5 * 1024 * 1024;

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut typed = kind.to_vec();
    typed.extend_from_slice(data);
    out.extend_from_slice(&typed);
    out.extend_from_slice(&crc32(&typed).to_be_bytes());
}

/// A real, decodable 1×1 grey PNG: signature, IHDR, an uncompressed zlib IDAT, IEND.
fn tiny_png() -> Vec<u8> {
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    // width 1, height 1, bit depth 8, colour type 0 (grey), deflate, no filter, no interlace
    chunk(&mut png, b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
    let raw = [0u8, 0x80]; // filter byte "none", one grey pixel
    let mut zlib = vec![0x78, 0x01, 0x01, 0x02, 0x00, 0xFD, 0xFF];
    zlib.extend_from_slice(&raw);
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

fn jpeg_header() -> Vec<u8> {
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    jpeg.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    jpeg.extend_from_slice(&[0xFF, 0xD9]);
    jpeg
}

fn webp_header() -> Vec<u8> {
    let mut webp = b"RIFF".to_vec();
    webp.extend_from_slice(&26u32.to_le_bytes());
    webp.extend_from_slice(b"WEBPVP8L");
    webp.extend_from_slice(&[
        0x0D, 0, 0, 0, 0x2F, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88,
    ]);
    webp
}

const BOUNDARY: &str = "pillbox-test-boundary-7MA4YWxkTrZu0gW";

/// A multipart/form-data body with one file part.
fn multipart(part: &str, filename: &str, content_type: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{part}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// PUT …/profile/avatar with a hand-built multipart body; the JSON answer
/// is checked against the OpenAPI document.
async fn upload_as(app: &TestApp, token: &str, body: Vec<u8>) -> TestResponse {
    let path = app.hh("/profile/avatar");
    let request = Request::builder()
        .method(Method::PUT)
        .uri(&path)
        .header("authorization", format!("Bearer {token}"))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(Body::from(body))
        .unwrap();
    let response = app.raw_request(request).await;
    Contract::new(app.document().clone()).check(&Method::PUT, &path, &response);
    response
}

async fn upload(
    app: &TestApp,
    part: &str,
    filename: &str,
    content_type: &str,
    data: &[u8],
) -> TestResponse {
    upload_as(
        app,
        &app.owner,
        multipart(part, filename, content_type, data),
    )
    .await
}

/// GET …/profile/avatar: the exact bytes, not decoded as JSON.
async fn fetch_avatar(app: &TestApp, token: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
    let request = Request::builder()
        .uri(app.hh("/profile/avatar"))
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, bytes.to_vec())
}

#[track_caller]
fn assert_avatar(got: &(StatusCode, HeaderMap, Vec<u8>), content_type: &str, bytes: &[u8]) {
    assert_eq!(got.0, StatusCode::OK);
    assert_eq!(got.1["content-type"], content_type);
    assert_eq!(got.1["cache-control"], "no-store");
    assert_eq!(got.2.len(), bytes.len());
    assert!(got.2 == bytes, "avatar bytes differ");
}

fn error_fields(response: &TestResponse) -> Vec<String> {
    response.body["error"]["errors"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// (lock_version, updated_at) of a person, and how many change-feed entries they have.
async fn person_state(app: &TestApp, person_id: i64) -> (i64, String, i64) {
    app.db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT lock_version, updated_at,
                        (SELECT count(*) FROM change_feed
                         WHERE record_type = 'Person' AND record_id = p.id)
                 FROM people p WHERE id = ?1",
                [person_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?)
        })
        .await
        .unwrap()
}

async fn owner_person_id(app: &TestApp) -> i64 {
    let me = app.get(&app.hh("/me"), &app.owner).await;
    me.data()["person"]["id"].as_i64().unwrap()
}

#[tokio::test]
async fn get_and_patch_the_profile() {
    let app = TestApp::new().await;
    let person_id = owner_person_id(&app).await;

    let got = app.get(&app.hh("/profile"), &app.owner).await;
    got.assert_status(200);
    let profile = got.data();
    assert_eq!(profile["id"], json!(person_id.to_string()));
    assert_eq!(profile["name"], "Olive Owner");
    assert_eq!(profile["email"], "owner@example.org");
    assert_eq!(profile["date_of_birth"], Value::Null);
    assert_eq!(profile["age"], Value::Null);
    assert_eq!(profile["time_zone"], Value::Null);
    assert_eq!(profile["gravatar_enabled"], false);
    assert_eq!(profile["mobile_shortcuts"], json!([]));
    assert_eq!(profile["has_avatar"], false);
    let (lock_before, _, feed_before) = person_state(&app, person_id).await;

    let updated = app
        .patch(
            &app.hh("/profile"),
            &app.owner,
            json!({"profile": {
                "date_of_birth": "1980-02-29",
                "time_zone": "Europe/Paris",
                "gravatar_enabled": true,
                "mobile_shortcuts": ["record_dose", "stock"],
            }}),
            None,
        )
        .await;
    updated.assert_status(200);
    let profile = updated.data();
    assert_eq!(profile["date_of_birth"], "1980-02-29");
    assert!(profile["age"].as_i64().unwrap() >= 46);
    assert_eq!(profile["time_zone"], "Europe/Paris");
    assert_eq!(profile["gravatar_enabled"], true);
    assert_eq!(profile["mobile_shortcuts"], json!(["record_dose", "stock"]));
    assert_eq!(profile["email"], "owner@example.org");
    assert!(profile["updated_at"].as_str().unwrap() > got.data()["updated_at"].as_str().unwrap());

    // The date of birth went to the person through its rule: a new version and a feed entry.
    let (lock_after, _, feed_after) = person_state(&app, person_id).await;
    assert_eq!(lock_after, lock_before + 1);
    assert_eq!(feed_after, feed_before + 1);
    let person = app
        .get(&app.hh(&format!("/people/{person_id}")), &app.owner)
        .await;
    assert_eq!(person.data()["date_of_birth"], "1980-02-29");

    // The same answer on a later read; null clears the time zone; absent keys stay.
    let again = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(again.data(), profile);
    let cleared = app
        .patch(
            &app.hh("/profile"),
            &app.owner,
            json!({"profile": {"time_zone": null}}),
            None,
        )
        .await;
    cleared.assert_status(200);
    assert_eq!(cleared.data()["time_zone"], Value::Null);
    assert_eq!(cleared.data()["gravatar_enabled"], true);
    assert_eq!(cleared.data()["date_of_birth"], "1980-02-29");
    // Only account fields changed: the person did not move on.
    assert_eq!(person_state(&app, person_id).await.0, lock_after);
}

#[tokio::test]
async fn a_member_edits_their_own_profile() {
    let app = TestApp::new().await;
    let (_, member) = app
        .add_member("mia@example.org", Role::Member, Some("Mia Member"))
        .await;
    let got = app.get(&app.hh("/profile"), &member).await;
    got.assert_status(200);
    assert_eq!(got.data()["name"], "Mia Member");
    assert_eq!(got.data()["email"], "mia@example.org");
    let updated = app
        .patch(
            &app.hh("/profile"),
            &member,
            json!({"profile": {"date_of_birth": "2001-07-04", "mobile_shortcuts": ["takes"]}}),
            None,
        )
        .await;
    updated.assert_status(200);
    assert_eq!(updated.data()["date_of_birth"], "2001-07-04");
    // The owner's profile is their own, untouched.
    let owner = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(owner.data()["mobile_shortcuts"], json!([]));
}

#[tokio::test]
async fn unknown_fields_are_refused_by_name() {
    let app = TestApp::new().await;
    for (field, value) in [
        ("email", json!("new@example.org")),
        ("roles", json!(["owner"])),
        ("colour", json!("blue")),
    ] {
        let mut profile = json!({"gravatar_enabled": true});
        profile[field] = value;
        let refused = app
            .patch(
                &app.hh("/profile"),
                &app.owner,
                json!({"profile": profile}),
                None,
            )
            .await;
        refused.assert_error(422, "validation_failed");
        assert_eq!(error_fields(&refused), [field], "{}", refused.body);
    }
    // Nothing was saved by any of them.
    let got = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(got.data()["gravatar_enabled"], false);
    assert_eq!(got.data()["email"], "owner@example.org");

    // A body without the profile key names it.
    let missing = app
        .patch(&app.hh("/profile"), &app.owner, json!({}), None)
        .await;
    missing.assert_error(422, "validation_failed");
    assert_eq!(error_fields(&missing), ["profile"]);
}

#[tokio::test]
async fn invalid_values_are_refused() {
    let app = TestApp::new().await;
    let cases = [
        (json!({"date_of_birth": null}), "date_of_birth"),
        (json!({"date_of_birth": "2999-01-01"}), "date_of_birth"),
        (json!({"date_of_birth": "1990-02-30"}), "date_of_birth"),
        (json!({"time_zone": "Mars/Olympus_Mons"}), "time_zone"),
        (json!({"time_zone": ""}), "time_zone"),
        (json!({"gravatar_enabled": null}), "gravatar_enabled"),
        (json!({"gravatar_enabled": "yes"}), "gravatar_enabled"),
        (json!({"mobile_shortcuts": null}), "mobile_shortcuts"),
        (json!({"mobile_shortcuts": [""]}), "mobile_shortcuts"),
        (
            json!({"mobile_shortcuts": ["x".repeat(51)]}),
            "mobile_shortcuts",
        ),
        (
            json!({"mobile_shortcuts": (0..21).map(|i| format!("s{i}")).collect::<Vec<_>>()}),
            "mobile_shortcuts",
        ),
    ];
    for (profile, field) in cases {
        let refused = app
            .patch(
                &app.hh("/profile"),
                &app.owner,
                json!({"profile": profile}),
                None,
            )
            .await;
        refused.assert_error(422, "validation_failed");
        assert!(
            error_fields(&refused).contains(&field.to_string()),
            "{profile}: {}",
            refused.body
        );
    }
    // Limits are inclusive: 20 shortcuts of 50 characters are fine.
    let full: Vec<String> = (0..20).map(|i| format!("{i:0>50}")).collect();
    app.patch(
        &app.hh("/profile"),
        &app.owner,
        json!({"profile": {"mobile_shortcuts": full}}),
        None,
    )
    .await
    .assert_status(200);
}

#[tokio::test]
async fn a_failing_patch_saves_nothing() {
    let app = TestApp::new().await;
    let person_id = owner_person_id(&app).await;
    let before = app.get(&app.hh("/profile"), &app.owner).await;
    let person_before = person_state(&app, person_id).await;

    // Refused while checking: a good date of birth beside a bad time zone.
    let refused = app
        .patch(
            &app.hh("/profile"),
            &app.owner,
            json!({"profile": {"date_of_birth": "1990-01-01", "time_zone": "Nowhere/Land",
                "gravatar_enabled": true}}),
            None,
        )
        .await;
    refused.assert_error(422, "validation_failed");
    assert_eq!(error_fields(&refused), ["time_zone"]);

    // Refused by the people rule after the account part was already written
    // in the transaction: that write is rolled back too.
    let refused = app
        .patch(
            &app.hh("/profile"),
            &app.owner,
            json!({"profile": {"date_of_birth": "1850-01-01", "time_zone": "Asia/Tokyo",
                "mobile_shortcuts": ["a"]}}),
            None,
        )
        .await;
    refused.assert_error(422, "validation_failed");
    assert_eq!(error_fields(&refused), ["date_of_birth"]);
    assert_eq!(
        refused.body["error"]["errors"]["date_of_birth"][0], "is not a plausible date of birth",
        "the people rule, not the profile's own checks, refused it"
    );

    let after = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(after.data(), before.data());
    assert_eq!(person_state(&app, person_id).await, person_before);
    let account_updated: String = app
        .db
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT updated_at FROM accounts WHERE email = 'owner@example.org'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert!(account_updated.as_str() <= before.data()["updated_at"].as_str().unwrap());
}

#[tokio::test]
async fn no_linked_person_means_no_profile() {
    let app = TestApp::new().await;
    let (_, member) = app
        .add_member("nobody@example.org", Role::Member, None)
        .await;
    let got = app.get(&app.hh("/profile"), &member).await;
    got.assert_error(404, "not_found");
    assert!(
        got.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no person is linked"),
        "{}",
        got.body
    );
    app.patch(
        &app.hh("/profile"),
        &member,
        json!({"profile": {"gravatar_enabled": true}}),
        None,
    )
    .await
    .assert_error(404, "not_found");
    let refused = upload_as(
        &app,
        &member,
        multipart("avatar", "a.png", "image/png", &tiny_png()),
    )
    .await;
    refused.assert_error(404, "not_found");
    app.send(
        Method::GET,
        &app.hh("/profile/avatar"),
        Some(&member),
        None,
        &[],
    )
    .await
    .assert_error(404, "not_found");
    app.delete(&app.hh("/profile/avatar"), &member, None)
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn person_access_is_checked_now() {
    let app = TestApp::new().await;
    let (membership_id, member) = app
        .add_member("vic@example.org", Role::Member, Some("Vic Viewer"))
        .await;
    // The member's own grant turned down to view: reading works, changing does not.
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_access_grants SET access_level = 'view' WHERE membership_id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&app.hh("/profile"), &member)
        .await
        .assert_status(200);
    app.patch(
        &app.hh("/profile"),
        &member,
        json!({"profile": {"gravatar_enabled": true}}),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    upload_as(
        &app,
        &member,
        multipart("avatar", "a.png", "image/png", &tiny_png()),
    )
    .await
    .assert_error(403, "forbidden");
    app.delete(&app.hh("/profile/avatar"), &member, None)
        .await
        .assert_error(403, "forbidden");
    let got = app.get(&app.hh("/profile"), &member).await;
    assert_eq!(got.data()["gravatar_enabled"], false);
    assert_eq!(got.data()["has_avatar"], false);

    // Revoked altogether: the person is out of scope.
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_access_grants SET revoked_at = '2020-01-01T00:00:00.000000Z'
                 WHERE membership_id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&app.hh("/profile"), &member)
        .await
        .assert_error(404, "not_found");
    app.send(
        Method::GET,
        &app.hh("/profile/avatar"),
        Some(&member),
        None,
        &[],
    )
    .await
    .assert_error(404, "not_found");
}

#[tokio::test]
async fn avatar_upload_fetch_and_delete() {
    let app = TestApp::new().await;
    let png = tiny_png();

    // Nothing yet.
    let (status, _, _) = fetch_avatar(&app, &app.owner).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let stored = upload(&app, "avatar", "me.png", "image/png", &png).await;
    stored.assert_status(200);
    assert_eq!(stored.data()["has_avatar"], true);
    assert_eq!(stored.data()["name"], "Olive Owner");
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &png);
    let profile = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(profile.data()["has_avatar"], true);
    // No URL of any kind is handed out.
    assert!(!profile.body.to_string().contains("http"));

    // JPEG and WebP are recognised.
    let jpeg = jpeg_header();
    upload(&app, "avatar", "me.jpg", "image/jpeg", &jpeg)
        .await
        .assert_status(200);
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/jpeg", &jpeg);
    let webp = webp_header();
    upload(&app, "avatar", "me.webp", "application/octet-stream", &webp)
        .await
        .assert_status(200);
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/webp", &webp);

    // The content decides, not the name or the part's content type.
    upload(&app, "avatar", "x.jpg", "image/jpeg", &png)
        .await
        .assert_status(200);
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &png);

    // Delete, then nothing to fetch; deleting again is still 204.
    app.delete(&app.hh("/profile/avatar"), &app.owner, None)
        .await
        .assert_status(204);
    let (status, _, body) = fetch_avatar(&app, &app.owner).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], "not_found");
    app.delete(&app.hh("/profile/avatar"), &app.owner, None)
        .await
        .assert_status(204);
    let profile = app.get(&app.hh("/profile"), &app.owner).await;
    assert_eq!(profile.data()["has_avatar"], false);
}

#[tokio::test]
async fn invalid_uploads_keep_the_existing_avatar() {
    let app = TestApp::new().await;
    let png = tiny_png();
    upload(&app, "avatar", "me.png", "image/png", &png)
        .await
        .assert_status(200);

    // A text file dressed as a PNG.
    let text = upload(&app, "avatar", "a.png", "image/png", b"just some text\n").await;
    text.assert_error(422, "validation_failed");
    assert_eq!(error_fields(&text), ["avatar"]);
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &png);

    // A RIFF file that is not WebP, an empty file, a GIF.
    for bad in [
        b"RIFF\x24\0\0\0WAVEfmt ".to_vec(),
        Vec::new(),
        b"GIF89a\x01\0\x01\0".to_vec(),
    ] {
        upload(&app, "avatar", "a.webp", "image/webp", &bad)
            .await
            .assert_error(422, "validation_failed");
    }

    // An unknown part, no file part, a body that is not multipart.
    let wrong_part = upload(&app, "picture", "a.png", "image/png", &png).await;
    wrong_part.assert_error(422, "validation_failed");
    assert_eq!(error_fields(&wrong_part), ["picture"]);
    upload_as(&app, &app.owner, format!("--{BOUNDARY}--\r\n").into_bytes())
        .await
        .assert_error(422, "validation_failed");
    let path = app.hh("/profile/avatar");
    let not_multipart = app
        .send(
            Method::PUT,
            &path,
            Some(&app.owner),
            Some(json!({"avatar": "aGVsbG8="})),
            &[],
        )
        .await;
    not_multipart.assert_error(422, "validation_failed");

    // One byte over 5 MiB (a PNG in every other respect): 413.
    let mut big = png.clone();
    big.resize(FIVE_MIB + 1, 0);
    let too_big = upload(&app, "avatar", "big.png", "image/png", &big).await;
    too_big.assert_error(413, "payload_too_large");
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &png);

    // Far beyond the route's body limit: also 413, also kept.
    let mut huge = png.clone();
    huge.resize(FIVE_MIB + 512 * 1024, 0);
    upload(&app, "avatar", "huge.png", "image/png", &huge)
        .await
        .assert_error(413, "payload_too_large");
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &png);

    // Exactly 5 MiB is allowed and comes back byte for byte.
    let mut max = png.clone();
    max.resize(FIVE_MIB, 7);
    upload(&app, "avatar", "max.png", "image/png", &max)
        .await
        .assert_status(200);
    assert_avatar(&fetch_avatar(&app, &app.owner).await, "image/png", &max);
}

#[tokio::test]
async fn avatar_needs_a_credential_and_is_documented() {
    let app = TestApp::new().await;
    upload(&app, "avatar", "me.png", "image/png", &tiny_png())
        .await
        .assert_status(200);
    app.send(Method::GET, &app.hh("/profile/avatar"), None, None, &[])
        .await
        .assert_error(401, "unauthorized");
    app.send(Method::DELETE, &app.hh("/profile/avatar"), None, None, &[])
        .await
        .assert_error(401, "unauthorized");
    let request = Request::builder()
        .method(Method::PUT)
        .uri(app.hh("/profile/avatar"))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(Body::from(multipart(
            "avatar",
            "a.png",
            "image/png",
            &tiny_png(),
        )))
        .unwrap();
    app.raw_request(request)
        .await
        .assert_error(401, "unauthorized");
    // Still there for its owner.
    let (status, _, _) = fetch_avatar(&app, &app.owner).await;
    assert_eq!(status, StatusCode::OK);

    let doc = app.document();
    let item = &doc["paths"]["/households/{household_id}/profile/avatar"];
    let content = item["get"]["responses"]["200"]["content"]
        .as_object()
        .unwrap();
    let mut types: Vec<&str> = content.keys().map(String::as_str).collect();
    types.sort_unstable();
    assert_eq!(types, ["image/jpeg", "image/png", "image/webp"]);
    let body = &item["put"]["requestBody"]["content"];
    assert!(body.get("multipart/form-data").is_some(), "{body}");
    assert!(item["put"]["responses"].get("413").is_some());
    assert_eq!(item["delete"]["operationId"], "deleteProfileAvatar");
    assert_eq!(
        doc["paths"]["/households/{household_id}/profile"]["patch"]["operationId"],
        "updateProfile"
    );
}

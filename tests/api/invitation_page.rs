//! The invitation landing page through the real Router (issue 13, point
//! 3): the emailed link opens a page that creates the invited email's
//! account or signs an existing one in (with its second factor), then
//! accepts through the same rule as `POST /invitations/accept`. The link
//! alone never acts.

use axum::body::Body;
use axum::http::{Method, Request};
use serde_json::json;

use crate::support::invitations::open;
use crate::support::invitations::{session_for, token_of};
use crate::support::mfa::enrol;
use crate::support::sign_in::{cookie_value, html, pkce, redeem, sign_in};
use crate::support::{PASSWORD, TestApp, TestResponse};

const COOKIE: &str = "pillbox_invitation_csrf=";

pub async fn invite(app: &TestApp, email: &str) -> (i64, String) {
    let r = app
        .post(
            &app.hh("/admin/invitations"),
            &app.owner,
            json!({"household_invitation": {
                "email": email,
                "role": "administrator",
                "person": {"name": "Pat Partner", "date_of_birth": "1985-04-02"},
            }}),
        )
        .await;
    r.assert_status(201);
    (r.id(), token_of(r.data()))
}

/// The page's CSRF cookie as `name=value`.
pub fn page_cookie(response: &TestResponse) -> String {
    let set = response
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with(COOKIE))
        .expect("the page sets its CSRF cookie");
    assert!(set.contains("Path=/invitation"), "{set}");
    cookie_value(&set)
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The hidden fields of the form whose `step` field is `step` (or of the
/// first form when `step` is None).
pub fn fields_of(page: &str, step: Option<&str>) -> Vec<(String, String)> {
    let form = page
        .split("</form>")
        .find(|form| match step {
            Some(step) => form.contains(&format!("name=\"step\" value=\"{step}\"")),
            None => form.contains("<form"),
        })
        .expect("the form");
    form.split("<input type=\"hidden\" ")
        .skip(1)
        .map(|rest| {
            let attr = |name: &str| {
                unescape(
                    rest.split(&format!("{name}=\""))
                        .nth(1)
                        .unwrap()
                        .split('"')
                        .next()
                        .unwrap(),
                )
            };
            (attr("name"), attr("value"))
        })
        .collect()
}

pub async fn post(app: &TestApp, fields: &[(String, String)], cookie: &str) -> TestResponse {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/invitation")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookie)
        .body(Body::from(serde_urlencoded::to_string(fields).unwrap()))
        .unwrap();
    app.raw_request(request).await
}

fn with(mut fields: Vec<(String, String)>, more: &[(&str, &str)]) -> Vec<(String, String)> {
    for (k, v) in more {
        fields.push((k.to_string(), v.to_string()));
    }
    fields
}

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.db
        .read(move |c| Ok(c.query_row(sql, [], |r| r.get(0))?))
        .await
        .unwrap()
}

async fn memberships_of(app: &TestApp, email: &'static str) -> i64 {
    app.db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT count(*) FROM memberships m JOIN accounts a ON a.id = m.account_id
                 WHERE a.email = ?1 AND m.status = 'active'",
                [email],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_new_invitee_creates_an_account_on_the_page_and_joins() {
    let app = TestApp::new().await;
    let (_, token) = invite(&app, "new@example.org").await;

    let page = open(&app, &token).await;
    page.assert_status(200);
    let text = html(&page);
    assert!(text.contains("Test household"), "{text}");
    assert!(text.contains("as an administrator"), "{text}");
    assert!(text.contains("new@example.org"));
    assert!(text.contains("<label for=\"new-password\">"));
    // The token only rides in the forms' hidden fields, never as text.
    assert_eq!(text.matches(&token).count(), 2, "{text}");
    assert!(!text.contains("Pat Partner") && !text.contains("1985"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("form-action 'self'"));
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    let cookie = page_cookie(&page);
    let create = fields_of(text, Some("create"));
    assert!(create.iter().any(|(k, v)| k == "token" && *v == token));

    // A form from elsewhere (no matching cookie) changes nothing.
    let forged = post(
        &app,
        &with(
            create.clone(),
            &[("password", PASSWORD), ("password_confirmation", PASSWORD)],
        ),
        "pillbox_invitation_csrf=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    )
    .await;
    forged.assert_status(403);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM accounts WHERE email = 'new@example.org'"
        )
        .await,
        0
    );

    // The password rules of setup, and the same password twice.
    let short = post(
        &app,
        &with(
            create.clone(),
            &[("password", "short"), ("password_confirmation", "short")],
        ),
        &cookie,
    )
    .await;
    short.assert_status(422);
    assert!(html(&short).contains("at least 12 characters"));
    assert!(html(&short).contains("role=\"alert\""));
    assert!(!html(&short).contains("value=\"short\""));
    let differ = post(
        &app,
        &with(
            create.clone(),
            &[
                ("password", PASSWORD),
                ("password_confirmation", "another long password"),
            ],
        ),
        &cookie,
    )
    .await;
    differ.assert_status(422);
    assert!(html(&differ).contains("differ"));
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM accounts WHERE email = 'new@example.org'"
        )
        .await,
        0
    );

    let done = post(
        &app,
        &with(
            create,
            &[("password", PASSWORD), ("password_confirmation", PASSWORD)],
        ),
        &cookie,
    )
    .await;
    done.assert_status(200);
    assert!(
        html(&done).contains("You are now a member"),
        "{}",
        html(&done)
    );
    assert!(html(&done).contains("href=\"/\""));
    assert_eq!(memberships_of(&app, "new@example.org").await, 1);
    let members = app.get(&app.hh("/admin/memberships"), &app.owner).await;
    let member = members
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "administrator")
        .expect("the new administrator")
        .clone();
    assert!(member["person_id"].is_i64());
    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    assert!(audit.body.to_string().contains("invitation.accepted"));

    // The link is spent; the new account signs in like any other.
    let again = open(&app, &token).await;
    again.assert_status(404);
    assert!(html(&again).contains("no longer valid"));
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, "new@example.org", None).await;
    redeem(&app, &code, &verifier).await.assert_status(200);
}

#[tokio::test]
async fn an_existing_account_signs_in_on_the_page_with_its_second_factor() {
    let app = TestApp::new().await;
    let access = session_for(&app, "partner@example.org").await;
    let (_, recovery) = enrol(&app, &access).await;
    let (_, token) = invite(&app, "partner@example.org").await;

    let page = open(&app, &token).await;
    let cookie = page_cookie(&page);
    let signing = fields_of(html(&page), Some("sign_in"));

    let wrong = post(
        &app,
        &with(signing.clone(), &[("password", "not the password")]),
        &cookie,
    )
    .await;
    wrong.assert_status(401);
    assert!(html(&wrong).contains("not right"));
    // Creating a second account for the email is refused, not merged.
    let create = fields_of(html(&page), Some("create"));
    let taken = post(
        &app,
        &with(
            create,
            &[("password", PASSWORD), ("password_confirmation", PASSWORD)],
        ),
        &cookie,
    )
    .await;
    taken.assert_status(409);
    assert!(html(&taken).contains("Sign in with it instead"));
    assert_eq!(memberships_of(&app, "partner@example.org").await, 0);

    let second = post(&app, &with(signing, &[("password", PASSWORD)]), &cookie).await;
    second.assert_status(200);
    assert!(html(&second).contains("authenticator"), "{}", html(&second));
    assert_eq!(
        memberships_of(&app, "partner@example.org").await,
        0,
        "not before the second factor"
    );
    let step = fields_of(html(&second), None);
    assert!(step.iter().any(|(k, _)| k == "mfa_token"));
    let bad = post(&app, &with(step.clone(), &[("code", "000000")]), &cookie).await;
    bad.assert_status(401);
    let done = post(
        &app,
        &with(step, &[("recovery_code", recovery[0].as_str())]),
        &cookie,
    )
    .await;
    done.assert_status(200);
    assert!(
        html(&done).contains("You are now a member"),
        "{}",
        html(&done)
    );
    assert_eq!(memberships_of(&app, "partner@example.org").await, 1);
    let signed_in: i64 = count(
        &app,
        "SELECT count(*) FROM sign_in_events WHERE event_type = 'sign_in.succeeded'
         AND metadata LIKE '%\"via\":\"invitation\"%'",
    )
    .await;
    assert_eq!(signed_in, 1);
    // The session that existed before now reaches the household.
    let households = app.get("/api/v1/auth/households", &access).await;
    assert!(households.body.to_string().contains("Test household"));
}

#[tokio::test]
async fn a_revoked_expired_or_mangled_link_only_says_it_is_no_longer_valid() {
    let app = TestApp::new().await;
    let (revoked_id, revoked) = invite(&app, "a@example.org").await;
    let page = open(&app, &revoked).await;
    let cookie = page_cookie(&page);
    let create = fields_of(html(&page), Some("create"));
    app.delete(
        &app.hh(&format!("/admin/invitations/{revoked_id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let (_, expired) = invite(&app, "b@example.org").await;
    app.db
        .write(|tx| {
            tx.execute(
                "UPDATE invitations SET expires_at = '2020-01-01T00:00:00Z' WHERE email = 'b@example.org'",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let mangled = format!("{revoked}x");
    for token in [
        revoked.as_str(),
        expired.as_str(),
        mangled.as_str(),
        "",
        "pbx_inv_nothing",
    ] {
        let page = open(&app, token).await;
        page.assert_status(404);
        let text = html(&page);
        assert!(text.contains("no longer valid"), "{text}");
        assert!(
            !text.contains("Test household") && !text.contains("<form"),
            "{text}"
        );
    }
    // A form of a page opened before the revocation does nothing now.
    let late = post(
        &app,
        &with(
            create,
            &[("password", PASSWORD), ("password_confirmation", PASSWORD)],
        ),
        &cookie,
    )
    .await;
    late.assert_status(404);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM accounts WHERE email = 'a@example.org'"
        )
        .await,
        0
    );
}

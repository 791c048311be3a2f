//! The test harness: the real Router over a real SQLite file in a temp dir,
//! and every JSON response checked against the served OpenAPI document.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use pillbox::auth::{Role, accounts};
use pillbox::config::Settings;
use pillbox::db::Db;
use pillbox::household::app_tokens::{self, TokenRequest};
use pillbox::household::{self, NewMember, memberships};
use pillbox::state::AppState;
use serde_json::{Value, json};
use tower::ServiceExt;

pub mod invitations;
pub mod mfa;
pub mod process;
pub mod records;
pub mod reminders;
pub mod sign_in;

pub const PASSWORD: &str = "correct horse battery staple";

/// argon2id is slow on purpose; hash the shared test password once.
pub fn password_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| pillbox::auth::password::hash(PASSWORD).unwrap())
}

pub struct TestApp {
    /// Holds the database directory for the test's lifetime.
    #[allow(dead_code)]
    pub dir: tempfile::TempDir,
    pub db: Db,
    /// The state the router serves (its key derivation pool, say).
    pub state: AppState,
    pub router: Router,
    pub household_id: i64,
    /// The owner's app token.
    pub owner: String,
    pub owner_membership_id: i64,
    contract: Arc<Contract>,
}

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn etag(&self) -> String {
        self.header("etag")
            .expect("response has an ETag")
            .to_string()
    }

    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    pub fn id(&self) -> i64 {
        self.body["data"]["id"].as_i64().expect("data.id")
    }

    pub fn error_code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        self
    }

    /// An error in the spec's envelope with this status and code.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) -> &Self {
        self.assert_status(status);
        assert_eq!(self.error_code(), code, "body: {}", self.body);
        if status != 429 {
            let request_id = self.body["error"]["request_id"].as_str().unwrap_or("");
            assert!(
                !request_id.is_empty(),
                "error without request_id: {}",
                self.body
            );
            assert_eq!(self.header("x-request-id"), Some(request_id));
        }
        self
    }
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with_settings(Settings {
            rate_limit_per_minute: 0,
            ..Settings::default()
        })
        .await
    }

    pub async fn with_settings(settings: Settings) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let set_up = db
            .write(|conn| {
                household::set_up(
                    conn,
                    "Test household",
                    "Europe/London",
                    &NewMember {
                        email: "owner@example.org",
                        password_hash: password_hash(),
                        person_name: "Olive Owner",
                        role: Role::Owner,
                    },
                )
            })
            .await
            .unwrap();
        let state = pillbox::app::state(db.clone(), settings);
        let router = pillbox::app(state.clone());
        let mut app = TestApp {
            dir,
            db,
            state,
            router,
            household_id: set_up.household_id,
            owner: String::new(),
            owner_membership_id: set_up.membership_id,
            contract: Arc::new(Contract::empty()),
        };
        app.owner = app
            .token_for(set_up.household_id, set_up.membership_id)
            .await;
        let doc = app
            .raw(Method::GET, "/api/v1/openapi.json", None, None, &[])
            .await;
        assert_eq!(doc.status, StatusCode::OK);
        app.contract = Arc::new(Contract::new(doc.body));
        app
    }

    pub fn document(&self) -> &Value {
        &self.contract.doc
    }

    /// Issues an app token directly through the rule the CLI uses.
    pub async fn token_for(&self, household_id: i64, membership_id: i64) -> String {
        self.db
            .write(move |conn| {
                app_tokens::issue(
                    conn,
                    &TokenRequest {
                        household_id,
                        membership_id,
                        name: "test",
                        max_age_days: None,
                        issued_by: None,
                    },
                )
            })
            .await
            .unwrap()
            .token
    }

    /// Adds a member and returns (membership id, token). With a name, through
    /// the rule setup and `member add` use (a linked person of that name);
    /// without one, a member whose person has since been unlinked: an account
    /// and membership alone, as `PUT /admin/memberships/{id}` can leave it.
    pub async fn add_member(
        &self,
        email: &str,
        role: Role,
        person_name: Option<&str>,
    ) -> (i64, String) {
        let household_id = self.household_id;
        let email = email.to_string();
        let person_name = person_name.map(str::to_string);
        let membership_id = self
            .db
            .write(move |conn| match person_name.as_deref() {
                Some(person_name) => household::add_member(
                    conn,
                    household_id,
                    &NewMember {
                        email: &email,
                        password_hash: password_hash(),
                        person_name,
                        role,
                    },
                ),
                None => {
                    let account_id = accounts::create(conn, &email, password_hash(), None)?;
                    memberships::store::insert(conn, household_id, account_id, None, role)
                }
            })
            .await
            .unwrap();
        let token = self.token_for(household_id, membership_id).await;
        (membership_id, token)
    }

    /// Another household on the same server, with an owner of its own:
    /// (household id, the owner's token).
    pub async fn other_household(&self, name: &str, owner_email: &str) -> (i64, String) {
        let (name, email) = (name.to_string(), owner_email.to_string());
        let set_up = self
            .db
            .write(move |conn| {
                household::set_up(
                    conn,
                    &name,
                    "Europe/London",
                    &NewMember {
                        email: &email,
                        password_hash: password_hash(),
                        person_name: "Other Owner",
                        role: Role::Owner,
                    },
                )
            })
            .await
            .unwrap();
        let token = self
            .token_for(set_up.household_id, set_up.membership_id)
            .await;
        (set_up.household_id, token)
    }

    /// A household path: `hh("/people")` → `/api/v1/households/{id}/people`.
    pub fn hh(&self, rest: &str) -> String {
        format!("/api/v1/households/{}{rest}", self.household_id)
    }

    pub async fn get(&self, path: &str, token: &str) -> TestResponse {
        self.send(Method::GET, path, Some(token), None, &[]).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> TestResponse {
        self.send(Method::POST, path, Some(token), Some(body), &[])
            .await
    }

    /// A POST carrying an Idempotency-Key.
    pub async fn post_keyed(
        &self,
        path: &str,
        token: &str,
        body: &Value,
        key: &str,
    ) -> TestResponse {
        let headers = [("Idempotency-Key", key)];
        self.send(
            Method::POST,
            path,
            Some(token),
            Some(body.clone()),
            &headers,
        )
        .await
    }

    pub async fn patch(
        &self,
        path: &str,
        token: &str,
        body: Value,
        if_match: Option<&str>,
    ) -> TestResponse {
        let headers: Vec<(&str, &str)> = if_match.map(|e| ("if-match", e)).into_iter().collect();
        self.send(Method::PATCH, path, Some(token), Some(body), &headers)
            .await
    }

    pub async fn put(
        &self,
        path: &str,
        token: &str,
        body: Value,
        if_match: Option<&str>,
    ) -> TestResponse {
        let headers: Vec<(&str, &str)> = if_match.map(|e| ("if-match", e)).into_iter().collect();
        self.send(Method::PUT, path, Some(token), Some(body), &headers)
            .await
    }

    pub async fn delete(&self, path: &str, token: &str, if_match: Option<&str>) -> TestResponse {
        let headers: Vec<(&str, &str)> = if_match.map(|e| ("if-match", e)).into_iter().collect();
        self.send(Method::DELETE, path, Some(token), None, &headers)
            .await
    }

    /// Sends a request and checks the response against the OpenAPI document.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        let response = self.raw(method.clone(), path, token, body, headers).await;
        self.contract.check(&method, path, &response);
        response
    }

    /// POSTs a form (`application/x-www-form-urlencoded`), as the OAuth
    /// endpoints take, and checks the response against the document.
    pub async fn form(&self, path: &str, fields: &[(&str, &str)]) -> TestResponse {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        let response = self.raw_request(request).await;
        self.contract.check(&Method::POST, path, &response);
        response
    }

    /// Sends a request without the contract check.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = match body {
            Some(body) => builder
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
            None => builder.body(Body::empty()).unwrap(),
        };
        self.raw_request(request).await
    }

    pub async fn raw_request(&self, request: Request<Body>) -> TestResponse {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}))
        };
        TestResponse {
            status,
            headers,
            body,
        }
    }
}

/// The served OpenAPI document and compiled response validators.
pub struct Contract {
    doc: Value,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Contract {
    fn empty() -> Contract {
        Contract {
            doc: Value::Null,
            validators: Mutex::new(HashMap::new()),
        }
    }

    pub fn new(doc: Value) -> Contract {
        Contract {
            doc,
            validators: Mutex::new(HashMap::new()),
        }
    }

    /// The documented template matching a concrete path (literal segments win).
    pub fn template_for(&self, path: &str) -> Option<String> {
        let path = path.split('?').next().unwrap();
        let path = path.strip_prefix("/api/v1")?;
        let segments: Vec<&str> = path.split('/').collect();
        let mut best: Option<(usize, String)> = None;
        for template in self.doc["paths"].as_object()?.keys() {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                continue;
            }
            let mut literal = 0;
            let matches = parts.iter().zip(&segments).all(|(t, s)| {
                if t.starts_with('{') {
                    true
                } else {
                    literal += 1;
                    t == s
                }
            });
            if matches && best.as_ref().is_none_or(|(n, _)| literal > *n) {
                best = Some((literal, template.clone()));
            }
        }
        best.map(|(_, t)| t)
    }

    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(pointer) => self
                .doc
                .pointer(pointer.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("unresolved $ref {pointer}")),
            None => value,
        }
    }

    /// Panics when the status is undocumented or the JSON body does not match.
    pub fn check(&self, method: &Method, path: &str, response: &TestResponse) {
        let Some(template) = self.template_for(path) else {
            return;
        };
        let method_key = method.as_str().to_ascii_lowercase();
        let Some(op) = self.doc["paths"][&template].get(&method_key) else {
            return;
        };
        let status = response.status.as_u16().to_string();
        let documented = op["responses"].get(&status).unwrap_or_else(|| {
            panic!(
                "{} {template} answered {status}, which is not documented; body: {}",
                method, response.body
            )
        });
        let documented = self.resolve(documented);
        let Some(schema) = documented.pointer("/content/application~1json/schema") else {
            assert!(
                response.body.is_null(),
                "{method} {template} {status} documents no body but sent {}",
                response.body
            );
            return;
        };
        let key = format!("{method_key} {template} {status}");
        let validator = {
            let mut cache = self.validators.lock().unwrap();
            cache
                .entry(key.clone())
                .or_insert_with(|| {
                    let root = json!({"allOf": [schema], "components": self.doc["components"]});
                    Arc::new(
                        jsonschema::options()
                            .should_validate_formats(true)
                            .build(&root)
                            .unwrap_or_else(|e| panic!("schema for {key} does not compile: {e}")),
                    )
                })
                .clone()
        };
        let errors: Vec<String> = validator
            .iter_errors(&response.body)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{key}: response does not match the OpenAPI document: {errors:?}\nbody: {}",
            response.body
        );
    }
}

/// Asserts that the current schema has, on each of `tables`, an insert, an
/// update and a delete trigger that moves `stamp` (a one-row table of
/// random stamps, such as `access_stamp` or `plan_stamp`).
pub fn assert_every_write_moves_the_stamp(stamp: &str, tables: &[&str]) {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(pillbox::db::SCHEMA_SQL).unwrap();
    for table in tables {
        for event in ["INSERT", "UPDATE", "DELETE"] {
            let body: String = conn
                .query_row(
                    "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?1
                       AND sql LIKE '%AFTER ' || ?2 || ' ON ' || ?1 || '%'",
                    [table, &event],
                    |r| r.get(0),
                )
                .unwrap_or_else(|_| panic!("no {event} trigger on {table}"));
            assert!(
                body.contains(&format!("UPDATE {stamp} SET stamp = random()")),
                "{body}"
            );
        }
    }
}

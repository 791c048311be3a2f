//! The OpenAPI 3.1 document is built from the same calls that build the
//! Router: a route cannot exist without its operation, nor the reverse.
//! Audience tags come from the path (the spec's four audiences), so an
//! operation cannot be filed under the wrong one.

use std::collections::{BTreeMap, BTreeSet};

use axum::Router;
use axum::http::Method;
use axum::routing::MethodRouter;
use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::state::AppState;

/// A schema that also admits `null`.
pub fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

pub const PUBLIC: &str = "Public";
pub const ACCOUNT: &str = "Account";
pub const HOUSEHOLD: &str = "Household";
pub const ADMINISTRATION: &str = "Household administration";

/// Resource tags and their descriptions; a tag is emitted only if used.
const RESOURCE_TAGS: &[(&str, &str)] = &[
    ("Capabilities", "What this server supports"),
    ("Contract", "This OpenAPI document"),
    ("Households", "Households available to the credential"),
    ("People", "People of a household"),
    ("Profile", "The signed-in member's own profile"),
    ("Locations", "Places where medicines are kept"),
    ("Medications", "Medicines of the household and their stock"),
    (
        "Dosage options",
        "Ways a medication is taken, with schedule defaults",
    ),
    ("Stock removals", "Stock that left other than as a dose"),
    (
        "Schedules",
        "When a person takes a medication: dose, timing and dates",
    ),
    (
        "Person medications",
        "Medications assigned directly to a person, routine or as needed",
    ),
    (
        "Medication takes",
        "Doses actually given, with the stock they used and safety warnings",
    ),
    (
        "Pause periods",
        "Periods during which a schedule or direct assignment is paused, and why",
    ),
    (
        "Dose occurrences",
        "Expected doses of a day, their signed keys and outcomes",
    ),
    (
        "Health events",
        "Illnesses and suspected side effects of a person",
    ),
    (
        "Notification preferences",
        "Which reminders the signed-in member's person receives, and when",
    ),
    (
        "Notification devices",
        "Where the signed-in member's reminders are delivered: Web Push, phones, ntfy",
    ),
    ("Location memberships", "Which people a location serves"),
    ("Settings", "Household settings"),
    ("Memberships", "Members of a household and their roles"),
    (
        "Person access grants",
        "Which member may view, record for or manage which person",
    ),
    (
        "App tokens",
        "Household app tokens for API and MCP integrations",
    ),
    ("Audit logs", "Security audit events"),
    (
        "Invitations",
        "Invitations into a household and their acceptance",
    ),
    (
        "OAuth",
        "Sign-in: the OAuth 2.0 authorization server for public clients (PKCE S256)",
    ),
    ("Sessions", "Signed-in devices of the account"),
    (
        "Linked identities",
        "Identity-provider identities that sign in as the account",
    ),
    ("Multi-factor", "TOTP second factor and recovery codes"),
    ("Sync", "Snapshots and the change feed for offline clients"),
    (
        "Medication review prompts",
        "Prompts to ask a pharmacist or doctor about medicines a drug label warns about together, and their reviews",
    ),
    (
        "Reports",
        "A person's health history and medication reviews, as JSON and PDF",
    ),
    (
        "Portability",
        "Encrypted household export and import, and data exports",
    ),
    (
        "Lookup",
        "Medication lookup in the national medicines dictionary and AI set-up suggestions",
    ),
];

fn audience_tags() -> [(&'static str, &'static str); 4] {
    [
        (PUBLIC, "No credential needed"),
        (ACCOUNT, "A credential without a selected household"),
        (HOUSEHOLD, "Paths under /households/{household_id}"),
        (
            ADMINISTRATION,
            "Paths under /households/{household_id}/admin",
        ),
    ]
}

/// One documented operation.
pub struct Op {
    method: Method,
    path: &'static str,
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
    description: Option<&'static str>,
    public: bool,
    deprecated: bool,
    params: Vec<Value>,
    body: Option<(Value, &'static str, bool)>,
    success: (u16, Option<Value>, bool),
    /// A 200 documented beside a 201 success: the same body for a record
    /// that already existed (an idempotent create).
    also_ok: Option<Value>,
    /// Path parameters other than `{id}` that are numeric ids only.
    numeric_params: Vec<&'static str>,
    text_params: Vec<&'static str>,
    /// Media types of a binary (non-JSON) success body.
    binary: Vec<String>,
    errors: BTreeSet<u16>,
    /// Responses documented as given (OAuth's own error bodies, pages,
    /// redirects), overriding the generated ones of the same status.
    extra: Vec<(u16, Value)>,
    /// Component schemas generated from the types this operation names.
    components: Map<String, Value>,
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The schema of `T` as it is serialized (a response) or deserialized (a
/// request): a `$ref` to its component, with every component it needs.
fn generate<T: JsonSchema + ?Sized>(contract: Contract) -> (Value, Map<String, Value>) {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
            s.contract = contract;
        })
        .with_transform(RecursiveTransform(drop_null_default))
        .into_generator();
    let schema = generator.subschema_for::<T>().to_value();
    (schema, generator.take_definitions(true))
}

/// An attribute left out keeps its value (`#[serde(default)]` on an
/// `Option<Option<_>>`); schemars would document that as `"default": null`,
/// which would read as "absent means null".
fn drop_null_default(schema: &mut Schema) {
    if schema.get("default") == Some(&Value::Null) {
        schema.remove("default");
    }
}

/// An IANA time zone name this server knows (the `TimeZone` component).
pub struct TimeZone;

impl JsonSchema for TimeZone {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TimeZone".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        time_zone_schema()
            .try_into()
            .expect("the time zone schema is an object")
    }
}

/// The component name of a generated schema that is a `$ref`.
fn ref_name(schema: &Value) -> &str {
    schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .expect("a documented body type is a named component, not an inline schema")
}

/// `{"data": <T>}`, as `respond` wraps one record.
fn single_wrapper(name: &str) -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["data"],
        "properties": {"data": schema_ref(name)},
    })
}

/// `{"data": [<T>...], "meta": <PaginationMeta>}`, as `respond` wraps a page.
fn collection_wrapper(name: &str) -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["data", "meta"],
        "properties": {
            "data": {"type": "array", "items": schema_ref(name)},
            "meta": schema_ref("PaginationMeta"),
        },
    })
}

/// Schemas whose wire form is not a derived one: numeric ids, portable
/// ids, timestamps and calendar dates are plain integers and strings in
/// Rust, named in `#[schemars(with = ...)]` by these markers.
macro_rules! wire_form {
    ($($(#[$meta:meta])* $name:ident => $schema:tt),+ $(,)?) => {
        $(
            $(#[$meta])*
            pub struct $name;

            impl JsonSchema for $name {
                fn schema_name() -> std::borrow::Cow<'static, str> {
                    stringify!($name).into()
                }

                fn json_schema(_: &mut SchemaGenerator) -> Schema {
                    json_schema!($schema)
                }
            }
        )+
    };
}

wire_form! {
    /// A record's numeric id.
    NumericId => {"type": "integer", "minimum": 1, "maximum": i64::MAX},
    /// A record's portable id (a UUID).
    PortableId => {"type": "string", "format": "uuid"},
    /// A calendar date, YYYY-MM-DD.
    Date => {"type": "string", "format": "date"},
}

impl Op {
    fn new(method: Method, path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op {
            method,
            path,
            id,
            tag,
            summary: "",
            description: None,
            public: false,
            deprecated: false,
            params: Vec::new(),
            body: None,
            success: (200, None, false),
            also_ok: None,
            numeric_params: Vec::new(),
            text_params: Vec::new(),
            binary: Vec::new(),
            errors: BTreeSet::new(),
            extra: Vec::new(),
            components: Map::new(),
        }
    }

    pub fn get(path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op::new(Method::GET, path, id, tag)
    }
    pub fn post(path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op::new(Method::POST, path, id, tag).errors(&[422])
    }
    pub fn patch(path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op::new(Method::PATCH, path, id, tag).errors(&[422])
    }
    pub fn put(path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op::new(Method::PUT, path, id, tag).errors(&[422])
    }
    pub fn delete(path: &'static str, id: &'static str, tag: &'static str) -> Op {
        Op::new(Method::DELETE, path, id, tag)
    }

    pub fn summary(mut self, summary: &'static str) -> Op {
        self.summary = summary;
        self
    }

    pub fn description(mut self, description: &'static str) -> Op {
        self.description = Some(description);
        self
    }

    /// No credential needed.
    pub fn public(mut self) -> Op {
        self.public = true;
        self
    }

    pub fn deprecated(mut self) -> Op {
        self.deprecated = true;
        self
    }

    /// A removed operation the contract still lists: deprecated, with the
    /// success it was listed with (`listed`), and the 410 it now answers.
    pub fn removed(mut self, listed: u16) -> Op {
        self.deprecated = true;
        self.success = (listed, None, false);
        self.errors.insert(410);
        self
    }

    /// A JSON request body of the named component schema.
    pub fn body_named(mut self, schema: &str) -> Op {
        self.body = Some((schema_ref(schema), "application/json", true));
        self.errors.extend([413, 415]);
        self
    }

    /// A JSON request body of type `T`, its schema generated from the type.
    pub fn body<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Deserialize);
        self.body = Some((schema, "application/json", true));
        self.errors.extend([413, 415]);
        self
    }

    /// A JSON create body of type `T` (`{<key>: <attributes>}`, the same
    /// type an update takes), documented as the component `name` whose
    /// attributes must include `required`.
    pub fn create_body<T: JsonSchema>(mut self, name: &str, required: &[&str]) -> Op {
        let schema = self.generated::<T>(Contract::Deserialize);
        let mut create = self.components[ref_name(&schema)].clone();
        let properties = create["properties"]
            .as_object_mut()
            .expect("a create body is an object");
        assert_eq!(properties.len(), 1, "a create body has one key");
        for attributes in properties.values_mut() {
            attributes["required"] = json!(required);
        }
        self.components.insert(name.to_string(), create);
        self.body = Some((schema_ref(name), "application/json", true));
        self.errors.extend([413, 415]);
        self
    }

    /// 200 with `{"data": <T>}` (the component `<T>Response`).
    pub fn ok<T: JsonSchema>(mut self) -> Op {
        let schema = self.single::<T>();
        self.success = (200, Some(schema), false);
        self
    }

    /// 201 with `{"data": <T>}` (the component `<T>Response`).
    pub fn created<T: JsonSchema>(mut self) -> Op {
        let schema = self.single::<T>();
        self.success = (201, Some(schema), false);
        self
    }

    /// Beside a 201 success, a 200 with `{"data": <T>}` when the record
    /// already existed and nothing changed.
    pub fn also_ok<T: JsonSchema>(mut self) -> Op {
        self.also_ok = Some(self.single::<T>());
        self
    }

    /// 200 with a page of `T`, `{"data": [...], "meta"}` (the component
    /// `<T>Collection`).
    pub fn page<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Serialize);
        let name = format!("{}Collection", ref_name(&schema));
        self.components
            .insert(name.clone(), collection_wrapper(ref_name(&schema)));
        self.success = (200, Some(schema_ref(&name)), false);
        self
    }

    /// 200 with `T` as the whole body (not wrapped in `{data}`): a body
    /// whose `meta` is its own, or a sync document.
    pub fn ok_unwrapped<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Serialize);
        self.success = (200, Some(schema), false);
        self
    }

    /// 201 with `T` as the whole body.
    pub fn created_unwrapped<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Serialize);
        self.success = (201, Some(schema), false);
        self
    }

    /// Beside a 201 success, a 200 with `T` as the whole body.
    pub fn also_ok_unwrapped<T: JsonSchema>(mut self) -> Op {
        self.also_ok = Some(self.generated::<T>(Contract::Serialize));
        self
    }

    fn single<T: JsonSchema>(&mut self) -> Value {
        let schema = self.generated::<T>(Contract::Serialize);
        let name = format!("{}Response", ref_name(&schema));
        self.components
            .insert(name.clone(), single_wrapper(ref_name(&schema)));
        schema_ref(&name)
    }

    fn generated<T: JsonSchema>(&mut self, contract: Contract) -> Value {
        let (schema, components) = generate::<T>(contract);
        self.components.extend(components);
        schema
    }

    /// A JSON request body of type `T` that may be left out.
    pub fn body_optional<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Deserialize);
        self.body = Some((schema, "application/json", false));
        self.errors.extend([413, 415]);
        self
    }

    /// An `application/x-www-form-urlencoded` request body of type `T` (the
    /// OAuth endpoints, as RFC 6749 has them).
    pub fn form_body<T: JsonSchema>(mut self) -> Op {
        let schema = self.generated::<T>(Contract::Deserialize);
        self.body = Some((schema, "application/x-www-form-urlencoded", true));
        self.errors.insert(413);
        self
    }

    /// A response documented exactly as `response` (an OpenAPI Response
    /// object), replacing any generated one for `status`.
    pub fn response(mut self, status: u16, response: Value) -> Op {
        self.extra.push((status, response));
        self
    }

    /// A response whose JSON body is a `T` as it is (OAuth error bodies).
    pub fn plain_response<T: JsonSchema>(self, status: u16, description: &str) -> Op {
        let mut op = self;
        let schema = op.generated::<T>(Contract::Serialize);
        op.response(
            status,
            json!({"description": description,
                "content": {"application/json": {"schema": schema}}}),
        )
    }

    /// 200 with a server-rendered HTML page.
    pub fn html_ok(mut self, description: &str) -> Op {
        self.success = (200, None, false);
        self.extra.push((
            200,
            json!({"description": description,
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                "content": {"text/html": {"schema": {"type": "string"}}}}),
        ));
        self
    }

    /// A JSON request body that may be left out.
    pub fn optional_body(mut self, schema: &str) -> Op {
        self.body = Some((schema_ref(schema), "application/json", false));
        self.errors.extend([413, 415]);
        self
    }

    /// A multipart/form-data request body of the named component schema
    /// (file parts are `{"type": "string", "format": "binary"}`).
    pub fn multipart_body(mut self, schema: &str) -> Op {
        self.body = Some((schema_ref(schema), "multipart/form-data", true));
        self.errors.insert(413);
        self
    }

    /// 200 with raw bytes (not JSON) of one of these media types.
    pub fn binary_ok(mut self, content_types: &[&str]) -> Op {
        self.success = (200, None, false);
        self.binary = content_types.iter().map(|t| t.to_string()).collect();
        self
    }

    /// 200 with `{"data": <schema>}` documented as the named component.
    pub fn ok_named(mut self, schema: &str) -> Op {
        self.success = (200, Some(schema_ref(schema)), false);
        self
    }

    pub fn created_named(mut self, schema: &str) -> Op {
        self.success = (201, Some(schema_ref(schema)), false);
        self
    }

    /// Beside a 201 success, a 200 with the same kind of body (the named
    /// component) when the record already existed and nothing changed.
    pub fn also_ok_named(mut self, schema: &str) -> Op {
        self.also_ok = Some(schema_ref(schema));
        self
    }

    pub fn no_content(mut self) -> Op {
        self.success = (204, None, false);
        self
    }

    /// The success response carries an ETag header.
    pub fn etag(mut self) -> Op {
        self.success.2 = true;
        self
    }

    pub fn errors(mut self, codes: &[u16]) -> Op {
        self.errors.extend(codes);
        self
    }

    pub fn query(mut self, name: &str, schema: Value, description: &str) -> Op {
        self.params.push(json!({
            "name": name, "in": "query", "required": false,
            "description": description, "schema": schema,
        }));
        self
    }

    /// A request header parameter (string valued).
    pub fn header(mut self, name: &str, required: bool, schema: Value, description: &str) -> Op {
        self.params.push(json!({
            "name": name, "in": "header", "required": required,
            "description": description, "schema": schema,
        }));
        self
    }

    pub fn paginated(self) -> Op {
        self.query(
            "page",
            json!({"type": "integer", "minimum": 1, "maximum": 1_000_000_000, "default": 1}),
            "Page number, from 1",
        )
        .query(
            "per_page",
            json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
            "Items per page, 1 to 100",
        )
        .errors(&[422])
    }

    pub fn updated_since(self) -> Op {
        self.query(
            "updated_since",
            json!({"type": "string", "format": "date-time"}),
            "Only records updated at or after this time",
        )
    }

    /// Optional If-Match: stale → 409.
    pub fn if_match(mut self) -> Op {
        self.params.push(json!({
            "name": "If-Match", "in": "header", "required": false,
            "description": "The exact ETag from the latest response; a stale one is refused with 409",
            "schema": {"type": "string", "minLength": 1},
        }));
        self.errors.insert(409);
        self
    }

    /// If-Match the operation cannot go without: missing → 428, stale → 409.
    pub fn if_match_required(mut self) -> Op {
        self.params.push(json!({
            "name": "If-Match", "in": "header", "required": true,
            "description": "The exact ETag from the latest response; missing is refused with 428, stale with 409",
            "schema": {"type": "string", "minLength": 1},
        }));
        self.errors.extend([409, 428]);
        self
    }

    /// Optional Idempotency-Key: an identical replay within the window gets
    /// the saved response; the same key with another request is a 409.
    pub fn idempotency_key(mut self) -> Op {
        use crate::db::idempotency::{HEADER, MAX_KEY_LENGTH, WINDOW_HOURS};
        self.params.push(json!({
            "name": HEADER, "in": "header", "required": false,
            "description": format!("Makes a retry safe: an identical request (method, path and body) sent again with the same key by the same member (with any of their credentials, so a replay after re-authenticating works) within {WINDOW_HOURS} hours gets the saved response (same status, body and ETag) without the write happening again. Current access is checked before a saved response is replayed. The same key with a different request is refused with 409 idempotency_key_reused. Only successful responses are saved."),
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[!-~]+$"},
        }));
        self.errors.extend([409, 422]);
        self
    }

    /// The path parameter `{name}` (other than `{id}`) is a numeric id only.
    pub fn numeric_path_param(mut self, name: &'static str) -> Op {
        self.numeric_params.push(name);
        self
    }

    /// A path parameter that is any non-empty string (a device token).
    pub fn text_path_param(mut self, name: &'static str) -> Op {
        self.text_params.push(name);
        self
    }

    /// `{id}` is a numeric id only.
    fn id_schema(&self, name: &str) -> Value {
        match name {
            "household_id" => json!({"type": "integer", "minimum": 1, "maximum": i64::MAX}),
            "portable_id" => schema_ref("PortableId"),
            _ => schema_ref("ResourceIdentifier"),
        }
    }

    fn audience(&self) -> &'static str {
        if self.public {
            PUBLIC
        } else if self.path.starts_with("/households/{household_id}/admin") {
            ADMINISTRATION
        } else if self.path.starts_with("/households/") {
            HOUSEHOLD
        } else {
            ACCOUNT
        }
    }

    fn document(&self, numeric_ids: bool) -> Value {
        let mut params: Vec<Value> = path_params(self.path)
            .map(|name| {
                let schema = if self.text_params.contains(&name) {
                    json!({"type": "string", "minLength": 1})
                } else if (numeric_ids && name == "id") || self.numeric_params.contains(&name) {
                    json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})
                } else {
                    self.id_schema(name)
                };
                json!({"name": name, "in": "path", "required": true, "schema": schema})
            })
            .collect();
        params.extend(self.params.iter().cloned());

        let mut responses = Map::new();
        let (status, schema, etag) = &self.success;
        let mut success = json!({
            "description": match status { 201 => "Created", 204 => "No content", _ => "OK" },
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}},
        });
        // A success may be JSON, raw bytes of some media types, or either
        // (an export whose mode picks the form).
        let mut content = Map::new();
        if let Some(schema) = schema {
            content.insert("application/json".into(), json!({"schema": schema}));
        }
        for media_type in &self.binary {
            content.insert(
                media_type.clone(),
                json!({"schema": {"type": "string", "format": "binary"}}),
            );
        }
        if !content.is_empty() {
            success["content"] = Value::Object(content);
        }
        if *etag {
            success["headers"]["ETag"] = json!({"$ref": "#/components/headers/ETag"});
        }
        if let Some(schema) = &self.also_ok {
            let mut existing = success.clone();
            existing["description"] =
                json!("OK: the record already existed and is returned unchanged");
            existing["content"] = json!({"application/json": {"schema": schema}});
            responses.insert("200".to_string(), existing);
        }
        responses.insert(status.to_string(), success);

        let mut errors = self.errors.clone();
        errors.insert(429);
        if !self.public {
            errors.insert(401);
        }
        if self.audience() == HOUSEHOLD || self.audience() == ADMINISTRATION {
            errors.extend([403, 404, 422]);
        }
        for code in errors {
            let response = if code == 429 {
                json!({"$ref": "#/components/responses/RateLimited"})
            } else {
                json!({"$ref": format!("#/components/responses/Error{code}")})
            };
            responses.insert(code.to_string(), response);
        }
        for (code, response) in &self.extra {
            responses.insert(code.to_string(), response.clone());
        }

        let mut op = json!({
            "operationId": self.id,
            "summary": self.summary,
            "tags": [self.audience(), self.tag],
            "parameters": params,
            "responses": responses,
        });
        if let Some(d) = self.description {
            op["description"] = json!(d);
        }
        if self.public {
            op["security"] = json!([]);
        }
        if self.deprecated {
            op["deprecated"] = json!(true);
        }
        if let Some((schema, content_type, required)) = &self.body {
            op["requestBody"] = json!({
                "required": required,
                "content": {*content_type: {"schema": schema}},
            });
        }
        op
    }
}

fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// Collects routes and their documentation together.
pub struct Api {
    router: Router<AppState>,
    paths: BTreeMap<&'static str, Map<String, Value>>,
    schemas: BTreeMap<String, Value>,
    operation_ids: BTreeSet<&'static str>,
}

impl Default for Api {
    fn default() -> Self {
        Api::new()
    }
}

impl Api {
    pub fn new() -> Api {
        let mut api = Api {
            router: Router::new(),
            paths: BTreeMap::new(),
            schemas: BTreeMap::new(),
            operation_ids: BTreeSet::new(),
        };
        common_schemas(&mut api);
        api
    }

    /// Adds a route whose `{id}` is a ResourceIdentifier (numeric or portable).
    pub fn route(self, op: Op, handler: MethodRouter<AppState>) -> Api {
        self.add(op, handler, false)
    }

    /// Adds a route whose `{id}` is a NumericId.
    pub fn route_numeric(self, op: Op, handler: MethodRouter<AppState>) -> Api {
        self.add(op, handler, true)
    }

    fn add(mut self, op: Op, handler: MethodRouter<AppState>, numeric_ids: bool) -> Api {
        assert!(
            self.operation_ids.insert(op.id),
            "duplicate operationId {}",
            op.id
        );
        assert!(
            RESOURCE_TAGS.iter().any(|(t, _)| *t == op.tag),
            "resource tag {} is not declared",
            op.tag
        );
        for (name, schema) in &op.components {
            self.register_generated(name, schema);
        }
        let method = op.method.as_str().to_ascii_lowercase();
        let item = self.paths.entry(op.path).or_default();
        assert!(
            item.insert(method, op.document(numeric_ids)).is_none(),
            "{} {} documented twice",
            op.method,
            op.path
        );
        self.router = self.router.route(op.path, handler);
        self
    }

    /// A generated component may be met again through another operation or
    /// type; it must then be the same schema, or two types share one name.
    fn register_generated(&mut self, name: &str, schema: &Value) {
        match self.schemas.get(name) {
            Some(existing) => assert_eq!(
                existing, schema,
                "component schema {name} generated twice, differently"
            ),
            None => {
                self.schemas.insert(name.to_string(), schema.clone());
            }
        }
    }

    /// Registers a component schema.
    pub fn schema(mut self, name: &str, schema: Value) -> Api {
        assert!(
            self.schemas.insert(name.to_string(), schema).is_none(),
            "schema {name} registered twice"
        );
        self
    }

    /// Registers `Name` and `NameResponse` (`{data}`).
    pub fn single_schema(self, name: &str, schema: Value) -> Api {
        self.schema(name, schema)
            .schema(&format!("{name}Response"), single_wrapper(name))
    }

    /// Registers `Name`, `NameResponse` (`{data}`) and `NameCollection`
    /// (`{data: [...], meta}`).
    pub fn resource_schema(self, name: &str, schema: Value) -> Api {
        self.schema(name, schema)
            .schema(&format!("{name}Response"), single_wrapper(name))
            .schema(&format!("{name}Collection"), collection_wrapper(name))
    }

    /// Registers a request body `{<key>: <attributes>}`.
    pub fn request_schema(self, name: &str, key: &str, attributes: Value) -> Api {
        let body = json!({
            "type": "object", "additionalProperties": false, "required": [key],
            "properties": {key: attributes},
        });
        self.schema(name, body)
    }

    /// Routes a removed path that the contract no longer lists as an
    /// operation (spec Authentication 6: `/auth/select_household`); it only
    /// ever answers 410.
    pub fn removed_route(mut self, path: &'static str, handler: MethodRouter<AppState>) -> Api {
        self.router = self.router.route(path, handler);
        self
    }

    /// The router (routes without the /api/v1 prefix) and the document.
    /// The Router and its document; `scope` is the one OAuth scope the
    /// sign-in server grants.
    pub fn finish(self, scope: &str) -> (Router<AppState>, Value) {
        let used: BTreeSet<String> = self
            .paths
            .values()
            .flat_map(|item| item.values())
            .flat_map(|op| op["tags"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        let tags: Vec<Value> = audience_tags()
            .iter()
            .chain(RESOURCE_TAGS.iter())
            .filter(|(name, _)| used.contains(*name))
            .map(|(name, description)| json!({"name": name, "description": description}))
            .collect();
        let paths: Map<String, Value> = self
            .paths
            .into_iter()
            .map(|(path, item)| (path.to_string(), Value::Object(item)))
            .collect();
        let doc = json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Household Medication Tracking API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": "Pillbox: a self-hosted household medication tracker.",
            },
            "servers": [{"url": "/api/v1"}],
            "security": [{"bearerAuth": []}, {"oauth2": []}],
            "tags": tags,
            "paths": paths,
            "components": {
                "securitySchemes": {
                    "bearerAuth": {"type": "http", "scheme": "bearer",
                        "description": "An opaque bearer token: an OAuth access token (pbx_at_...) from sign-in, or a household app token (pbx_app_...)"},
                    "oauth2": {"type": "oauth2",
                        "description": "Sign-in through the authorization code flow with PKCE (S256 only) for public clients; discover the endpoints at /.well-known/oauth-authorization-server. The access token is then sent as a bearer token.",
                        "flows": {"authorizationCode": {
                            "authorizationUrl": "/api/v1/oauth/authorize",
                            "tokenUrl": "/api/v1/oauth/token",
                            "refreshUrl": "/api/v1/oauth/token",
                            "scopes": {scope: "The account's households, as its memberships and grants allow"},
                        }}},
                },
                "schemas": self.schemas,
                "responses": error_responses(),
                "headers": {
                    "ETag": {"description": "Strong version tag; send it back in If-Match",
                        "schema": {"type": "string"}},
                    "RequestId": {"description": "Identifies the request in logs and error bodies",
                        "schema": {"type": "string"}},
                    "RetryAfter": {"description": "Seconds to wait before retrying",
                        "required": true,
                        "schema": {"type": "integer", "minimum": 1, "maximum": i64::MAX}},
                },
            },
        });
        (self.router, doc)
    }
}

fn error_responses() -> Value {
    let mut responses = Map::new();
    for (code, description) in [
        (
            401,
            "The bearer credential is absent, invalid, expired, revoked or no longer active",
        ),
        (
            403,
            "The credential cannot perform this operation in this household or person scope",
        ),
        (
            404,
            "The resource does not exist inside the authorised scope",
        ),
        (
            409,
            "The resource or idempotency state conflicts with the mutation",
        ),
        (
            410,
            "This endpoint was removed; the message names what replaced it",
        ),
        (413, "The request body is too large"),
        (415, "The request body is not sent as application/json"),
        (422, "Submitted attributes or filters are invalid"),
        (428, "The mutation needs a version precondition (If-Match)"),
        (
            502,
            "An outside service this operation relies on answered with something unusable",
        ),
        (
            503,
            "The feature is off in this server's configuration, or an outside service it relies on cannot answer now",
        ),
    ] {
        responses.insert(
            format!("Error{code}"),
            json!({
                "description": description,
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                "content": {"application/json": {"schema": schema_ref("Error")}},
            }),
        );
    }
    responses.insert(
        "RateLimited".into(),
        json!({
            "description": "Rate limit exceeded",
            "headers": {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}},
            "content": {"application/json": {"schema": schema_ref("RateLimitError")}},
        }),
    );
    Value::Object(responses)
}

/// IANA time zone names this server knows (its time zone database).
fn time_zone_schema() -> Value {
    let mut names: Vec<String> = jiff::tz::db()
        .available()
        .map(|name| name.as_str().to_string())
        .collect();
    names.sort();
    json!({"type": "string", "description": "An IANA time zone name, e.g. Europe/London", "enum": names})
}

fn common_schemas(api: &mut Api) {
    for components in [
        generate::<NumericId>(Contract::Serialize).1,
        generate::<PortableId>(Contract::Serialize).1,
        generate::<crate::domain::Timestamp>(Contract::Serialize).1,
        generate::<Date>(Contract::Serialize).1,
        generate::<TimeZone>(Contract::Serialize).1,
        generate::<crate::domain::PageMeta>(Contract::Serialize).1,
        generate::<crate::error::ErrorEnvelope>(Contract::Serialize).1,
        generate::<crate::error::RateLimitEnvelope>(Contract::Serialize).1,
    ] {
        for (name, schema) in &components {
            api.register_generated(name, schema);
        }
    }
    // A path parameter's schema: a numeric or a portable id.
    api.schemas.insert(
        "ResourceIdentifier".to_string(),
        json!({"description": "A numeric id or a portable id",
            "anyOf": [schema_ref("NumericId"), schema_ref("PortableId")]}),
    );
}

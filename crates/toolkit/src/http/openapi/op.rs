//! One documented operation, built beside its route.

use axum::http::Method;
use schemars::JsonSchema;
use schemars::generate::Contract;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

use super::schemas::*;
use super::tags::*;
use crate::http::query::{PageQuery, field_names};

/// One documented operation.
pub struct Op {
    pub(super) method: Method,
    pub(super) path: &'static str,
    pub(super) id: &'static str,
    pub(super) tag: &'static str,
    pub(super) summary: &'static str,
    pub(super) description: Option<&'static str>,
    pub(super) public: bool,
    pub(super) deprecated: bool,
    pub(super) params: Vec<Value>,
    pub(super) body: Option<(Value, &'static str, bool)>,
    pub(super) success: (u16, Option<Value>, bool),
    /// A 200 documented beside a 201 success: the same body for a record
    /// that already existed (an idempotent create).
    pub(super) also_ok: Option<Value>,
    /// Path parameters other than `{id}` that are numeric ids only.
    pub(super) numeric_params: Vec<&'static str>,
    pub(super) text_params: Vec<&'static str>,
    /// Media types of a binary (non-JSON) success body.
    pub(super) binary: Vec<String>,
    pub(super) errors: BTreeSet<u16>,
    /// Responses documented as given (OAuth's own error bodies, pages,
    /// redirects), overriding the generated ones of the same status.
    pub(super) extra: Vec<(u16, Value)>,
    /// Component schemas generated from the types this operation names.
    pub(super) components: Map<String, Value>,
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

    /// The query parameters of the shape `T` (see `http::query`), in the
    /// order its fields are declared: each field's name, its schema and its
    /// doc comment as the description. Each is listed as optional, as the
    /// contract has always had them: one an operation cannot go without
    /// says so in its description, and is a 422 naming it when left out.
    pub fn query_params<T: JsonSchema + DeserializeOwned>(mut self) -> Op {
        let (shape, components) = generate_inline::<T>(Contract::Deserialize);
        self.components.extend(components);
        for name in field_names::<T>() {
            let Some(schema) = shape["properties"].get(name) else {
                continue; // not documented (#[schemars(skip)])
            };
            let mut schema = schema.clone();
            let description = schema
                .as_object_mut()
                .and_then(|s| s.remove("description"))
                .unwrap_or_else(|| panic!("query parameter {name} has no doc comment"));
            without_null(&mut schema);
            self.params.push(json!({
                "name": name, "in": "query", "required": false,
                "description": description, "schema": schema,
            }));
        }
        self
    }

    /// One query parameter written out (the OAuth authorize endpoint, whose
    /// request type documents the sign-in form's fields in its own words).
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

    /// `page` and `per_page` (`http::query::PageQuery`).
    pub fn paginated(self) -> Op {
        self.query_params::<PageQuery>().errors(&[422])
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

    pub(super) fn document(&self, numeric_ids: bool) -> Value {
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

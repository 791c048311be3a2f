//! Component schemas: generated from the types that (de)serialize bodies,
//! the wrappers around them, and the shared error responses.

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

pub(super) fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The schema of `T` as it is serialized (a response) or deserialized (a
/// request): a `$ref` to its component, with every component it needs.
pub(super) fn generate<T: JsonSchema + ?Sized>(contract: Contract) -> (Value, Map<String, Value>) {
    let mut generator = settings(contract)
        .with_transform(RecursiveTransform(drop_null_default))
        .into_generator();
    let schema = generator.subschema_for::<T>().to_value();
    (schema, generator.take_definitions(true))
}

/// Components under `#/components/schemas`, for requests or responses.
fn settings(contract: Contract) -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
        s.contract = contract;
    })
}

/// The schema of `T` itself (not a `$ref` to it), with every component it
/// needs: the shape of an operation's query parameters.
pub(super) fn generate_inline<T: JsonSchema>(contract: Contract) -> (Value, Map<String, Value>) {
    let mut generator = settings(contract).into_generator();
    let schema = T::json_schema(&mut generator).to_value();
    (schema, generator.take_definitions(true))
}

/// A parameter left out is absent, never null: the `null` that schemars
/// adds to an `Option` field's schema is taken out again.
pub(super) fn without_null(schema: &mut Value) {
    let null = |v: &Value| v.get("type") == Some(&json!("null"));
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && schema.as_object().is_some_and(|o| o.len() == 1)
        && any.len() == 2
        && any.iter().any(null)
    {
        *schema = any.iter().find(|v| !null(v)).cloned().unwrap_or_default();
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            schema["type"] = only.clone();
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// An attribute left out keeps its value (`#[serde(default)]` on an
/// `Option<Option<_>>`); schemars would document that as `"default": null`,
/// which would read as "absent means null".
pub(super) fn drop_null_default(schema: &mut Schema) {
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
pub(super) fn ref_name(schema: &Value) -> &str {
    schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .expect("a documented body type is a named component, not an inline schema")
}

/// `{"data": <T>}`, as `respond` wraps one record.
pub(super) fn single_wrapper(name: &str) -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["data"],
        "properties": {"data": schema_ref(name)},
    })
}

/// `{"data": [<T>...], "meta": <PaginationMeta>}`, as `respond` wraps a page.
pub(super) fn collection_wrapper(name: &str) -> Value {
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

pub(super) fn error_responses() -> Value {
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
pub(super) fn time_zone_schema() -> Value {
    let mut names: Vec<String> = jiff::tz::db()
        .available()
        .map(|name| name.as_str().to_string())
        .collect();
    names.sort();
    json!({"type": "string", "description": "An IANA time zone name, e.g. Europe/London", "enum": names})
}

//! The collection of routes and their documentation, finished into the
//! Router and the OpenAPI document together.

use super::op::*;
use super::schemas::*;
use super::tags::*;
use crate::state::AppState;
use axum::Router;
use axum::routing::MethodRouter;
use schemars::generate::Contract;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What the composition root says of the whole service at the head of
/// the document: its title and version, its resource tags (each used tag
/// must be declared) and how a client signs in.
pub struct DocumentHead {
    pub info: Value,
    pub resource_tags: &'static [(&'static str, &'static str)],
    pub security_schemes: Value,
}

/// Collects routes and their documentation together.
pub struct Api {
    router: Router<AppState>,
    paths: BTreeMap<&'static str, Map<String, Value>>,
    pub(super) schemas: BTreeMap<String, Value>,
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
    pub(super) fn register_generated(&mut self, name: &str, schema: &Value) {
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

    /// The router (routes without the /api/v1 prefix) and the document,
    /// headed by what the composition root says of the whole service.
    pub fn finish(self, head: DocumentHead) -> (Router<AppState>, Value) {
        let used: BTreeSet<String> = self
            .paths
            .values()
            .flat_map(|item| item.values())
            .flat_map(|op| op["tags"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        let audiences = audience_tags();
        let declared = || audiences.iter().chain(head.resource_tags.iter());
        for tag in &used {
            assert!(
                declared().any(|(name, _)| name == tag),
                "resource tag {tag} is not declared"
            );
        }
        let tags: Vec<Value> = declared()
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
            "info": head.info,
            "servers": [{"url": "/api/v1"}],
            "security": [{"bearerAuth": []}, {"oauth2": []}],
            "tags": tags,
            "paths": paths,
            "components": {
                "securitySchemes": head.security_schemes,
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

pub(super) fn common_schemas(api: &mut Api) {
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

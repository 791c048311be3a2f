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

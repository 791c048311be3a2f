//! The MCP endpoint at `/mcp`: streamable HTTP (rmcp), stateless, each
//! HTTP request authenticated with a household app token before rmcp sees
//! it. Tool failures are MCP tool errors (`isError`) whose structured
//! content is the API's error envelope, code included.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::state::AppState;

pub const ENDPOINT: &str = "/mcp";
pub const TRANSPORT: &str = "streamable_http";

#[derive(Clone)]
struct Handler {
    state: AppState,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pillbox", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Pillbox household medication tracker. Read tools answer for the people this app token may see; \
                 write tools record doses, pauses and stock removals and need the matching access.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = super::TOOLS
            .iter()
            .map(|spec| {
                Tool::new(spec.name, spec.description, (spec.input)())
                    .with_raw_output_schema((spec.output)())
                    .with_annotations(
                        ToolAnnotations::new()
                            .read_only(spec.read_only)
                            .destructive(false)
                            .open_world(false),
                    )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The actor the guard resolved for the HTTP request carrying this call.
        let actor = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Actor>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the call carries no credential", None))?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match super::call(&self.state, actor, &request.name, arguments).await {
            Ok(value) => CallToolResult::structured(value),
            Err(error) => CallToolResult::structured_error(tool_error(&error)),
        };
        Ok(result.into())
    }
}

/// The API's error envelope for a failed tool call. Internal details stay
/// in the log, as for REST.
fn tool_error(error: &ApiError) -> Value {
    let message = match error {
        ApiError::Internal(detail) => {
            tracing::error!("MCP tool: {detail}");
            "internal server error".to_string()
        }
        other => other.to_string(),
    };
    let mut body = json!({
        "code": error.code(),
        "status": error.status().as_u16(),
        "message": message,
    });
    if let ApiError::Validation { errors, .. } = error {
        body["errors"] = json!(errors);
    }
    json!({"error": body})
}

/// `/mcp`, behind the app-token guard.
pub fn router(state: &AppState) -> Router<AppState> {
    let handler = Handler {
        state: state.clone(),
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(allowed_hosts(state.settings.public_url.get().as_deref()));
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let guarded = tower::ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .service(service);
    Router::new().nest_service(ENDPOINT, guarded)
}

/// Loopback names, and the public URL's host when one is configured:
/// rmcp refuses other Host headers (DNS rebinding).
fn allowed_hosts(public_url: Option<&str>) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(String::from)
        .collect();
    if let Some(host) = public_url
        .and_then(|url| reqwest::Url::parse(url).ok())
        .and_then(|url| url.host_str().map(str::to_string))
    {
        hosts.push(host);
    }
    hosts
}

/// Every request to `/mcp` must carry a household app token of an active
/// membership; the resolved actor travels with the request to the tools.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    match crate::auth::app_token_actor(&parts, &state).await {
        Ok(actor) => {
            parts.extensions.insert(actor);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => {
            let unauthorized = matches!(error, ApiError::Unauthorized(_));
            let mut response = error.into_response();
            if unauthorized {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
    }
}

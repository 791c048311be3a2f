//! The server's own origin for the links it hands out (the OAuth issuer,
//! the web app's redirect URI, invitation links) when no public URL is
//! configured. A client's `Host` header is no source for it: anyone can
//! send any Host, and a link or issuer built from it would point where the
//! sender chose. The origin is the address the connection reached (the
//! server's own interface and port); a Host naming the server itself (that
//! address, the machine's host name, `localhost` on a loopback connection)
//! is used as written, so a home server reached by its LAN name keeps that
//! name; any other Host changes nothing.

use std::net::SocketAddr;
use std::sync::OnceLock;

use axum::http::{HeaderMap, header};

use crate::state::{AppState, ServerSettings};

/// The local address a request's connection was accepted on, put beside
/// the request by the connection loop (`server`).
#[derive(Debug, Clone, Copy)]
pub struct ServedAt(pub SocketAddr);

/// Where requests served without a connection (in process) say they are.
const IN_PROCESS: &str = "http://localhost";

/// The machine's host name, read once (none when the system has none).
fn host_name() -> Option<&'static str> {
    static NAME: OnceLock<Option<String>> = OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .ok()
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| {
                !n.is_empty()
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b))
            })
    })
    .as_deref()
}

/// The names this connection may be addressed by: its local address, the
/// host name (and its `.local` mDNS form), and `localhost` on loopback.
fn own_hosts(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut names = vec![local.to_string()];
    if local.ip().is_loopback() {
        names.push(format!("localhost:{port}"));
    }
    if let Some(name) = host_name() {
        names.push(format!("{name}:{port}"));
        names.push(format!("{name}.local:{port}"));
    }
    if port == 80 {
        let bare: Vec<String> = names
            .iter()
            .filter_map(|n| n.rsplit_once(':').map(|(host, _)| host.to_string()))
            .collect();
        names.extend(bare);
    }
    names
}

/// The origin of links for a request: `public_url` when configured, else
/// the address its connection reached, named as its Host says only when
/// that Host is one of the server's own names.
pub fn origin(
    public_url: Option<&str>,
    headers: &HeaderMap,
    served_at: Option<ServedAt>,
) -> String {
    if let Some(url) = public_url {
        return url.trim_end_matches('/').to_string();
    }
    let Some(ServedAt(local)) = served_at else {
        return IN_PROCESS.to_string();
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    match host {
        Some(host) if own_hosts(local).contains(&host) => format!("http://{host}"),
        _ => format!("http://{local}"),
    }
}

/// The server's own origin for links and the OAuth issuer: the configured
/// public URL, or else the address the request's connection reached (never
/// a Host the client made up; see `http::origin`).
pub struct BaseUrl(pub String);

impl axum::extract::FromRequestParts<AppState> for BaseUrl {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(BaseUrl(base_url(&state.settings, parts)))
    }
}

pub fn base_url(settings: &ServerSettings, parts: &axum::http::request::Parts) -> String {
    origin(
        settings.public_url.get().as_deref(),
        &parts.headers,
        parts.extensions.get().copied(),
    )
}

/// Cookies get `Secure` when the server is reached over https.
pub fn is_https(base_url: &str) -> bool {
    base_url.starts_with("https://")
}

/// The client's address as the rate limiter keys it (behind trusted
/// proxies, the forwarded one), for failure counters and security events.
pub struct ClientAddress(pub String);

impl axum::extract::FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|axum::extract::ConnectInfo(addr)| addr.ip());
        Ok(ClientAddress(super::rate_limit::client_key(
            &parts.headers,
            peer,
            state.settings.trusted_proxies,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        headers
    }

    #[test]
    fn a_host_that_is_not_the_server_changes_nothing() {
        let at = Some(ServedAt("192.168.1.5:8080".parse().unwrap()));
        assert_eq!(
            origin(None, &with_host("evil.example"), at),
            "http://192.168.1.5:8080"
        );
        assert_eq!(
            origin(None, &with_host("192.168.1.5:8080"), at),
            "http://192.168.1.5:8080"
        );
        assert_eq!(
            origin(None, &with_host("localhost:8080"), at),
            "http://192.168.1.5:8080",
            "localhost names only a loopback connection"
        );
        let loopback = Some(ServedAt("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(
            origin(None, &with_host("LOCALHOST:8080"), loopback),
            "http://localhost:8080"
        );
        if let Some(name) = host_name() {
            assert_eq!(
                origin(None, &with_host(&format!("{name}:8080")), at),
                format!("http://{name}:8080")
            );
        }
        let v6 = Some(ServedAt("[::1]:8080".parse().unwrap()));
        assert_eq!(origin(None, &with_host("x"), v6), "http://[::1]:8080");
        assert_eq!(
            origin(
                Some("https://pills.example/"),
                &with_host("evil.example"),
                at
            ),
            "https://pills.example"
        );
        assert_eq!(origin(None, &with_host("evil.example"), None), IN_PROCESS);
    }
}

//! Rate limits keyed on what was verified. A request with a bearer
//! credential is verified here, once, and counts against that credential's
//! bucket only when the secret matched; the outcome travels to the `Actor`
//! extractor in the request's extensions. Requests without a credential,
//! and every failed authentication, count against the client's address,
//! failures in a stricter bucket of their own: once an address has used it
//! up, every further failure from it is a 429 instead of a 401. A verified
//! credential is never held back by its address's failures: behind one
//! home router or reverse proxy, a phone with a stale token must not lock
//! out the rest of the family (a guess at a 256-bit secret gains nothing
//! from learning which answer it got). A selector alone proves
//! nothing, so it never chooses a bucket (else anyone could drain a
//! victim's bucket, or escape every limit with a fresh selector each time).
//! The buckets themselves are `crate::limits`.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth;
use crate::error::ApiError;
use crate::state::AppState;

/// The header a reverse proxy appends the address it served to.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// The client's address as a bucket key. Without trusted proxies it is the
/// connection's peer; behind `n` of them it is the `n`th `X-Forwarded-For`
/// entry from the right (each proxy appends the address it was reached
/// from, so the entries further left were written by the client and prove
/// nothing). A chain shorter than promised, or an entry that is not an
/// address, falls back to the peer. IPv6 clients are keyed by their /64, the
/// block one subscriber line gets, so rotating addresses inside it escapes
/// nothing. Without a peer (a Router driven in process) every request
/// shares one key.
pub fn client_key(headers: &HeaderMap, peer: Option<IpAddr>, trusted_proxies: usize) -> String {
    let forwarded = (trusted_proxies > 0)
        .then(|| {
            let hops: Vec<&str> = headers
                .get_all(FORWARDED_FOR)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .collect();
            let at = hops.len().checked_sub(trusted_proxies)?;
            hops[at].parse::<IpAddr>().ok()
        })
        .flatten();
    match forwarded.or(peer).map(|ip| ip.to_canonical()) {
        Some(IpAddr::V4(ip)) => format!("address:{ip}"),
        Some(IpAddr::V6(ip)) => {
            let s = ip.segments();
            let block = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
            format!("address:{block}/64")
        }
        None => "address:unknown".to_string(),
    }
}

fn limited(retry_after_secs: u64) -> Response {
    let mut response = ApiError::RateLimited { retry_after_secs }.into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

pub async fn middleware(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let limits = &state.rate_limits;
    if !limits.requests.is_on() && !limits.auth_failures.is_on() {
        return next.run(request).await;
    }
    let now = Instant::now();
    // Worked out only when a bucket needs it: most requests carry a
    // credential that verifies, and never ask.
    let address = |request: &Request| {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        client_key(request.headers(), peer, limits.trusted_proxies)
    };
    let Some(presented) = auth::token::bearer(request.headers()).map(str::to_string) else {
        return match limits.requests.check(&address(&request), now) {
            Ok(()) => next.run(request).await,
            Err(wait) => limited(wait),
        };
    };
    let verified = match auth::verify(&state, presented).await {
        Ok(verified) => verified,
        Err(e) => return e.into_response(),
    };
    match &verified.0 {
        Ok(authenticated) => {
            if limits.requests.is_on()
                && let Err(wait) = limits
                    .requests
                    .check(&authenticated.credential.bucket(), now)
            {
                return limited(wait);
            }
        }
        Err(_) => {
            if let Err(wait) = limits.auth_failures.check(&address(&request), now) {
                return limited(wait);
            }
        }
    }
    request.extensions_mut().insert(verified);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_addresses_count_only_behind_trusted_proxies() {
        let mut headers = HeaderMap::new();
        headers.append(FORWARDED_FOR, "198.51.100.7, 203.0.113.9".parse().unwrap());
        headers.append(FORWARDED_FOR, "192.0.2.1".parse().unwrap());
        let peer = Some("10.0.0.2".parse().unwrap());
        assert_eq!(client_key(&headers, peer, 0), "address:10.0.0.2");
        assert_eq!(client_key(&headers, peer, 1), "address:192.0.2.1");
        assert_eq!(client_key(&headers, peer, 2), "address:203.0.113.9");
        assert_eq!(client_key(&headers, peer, 3), "address:198.51.100.7");
        assert_eq!(client_key(&headers, peer, 4), "address:10.0.0.2");
        assert_eq!(client_key(&HeaderMap::new(), None, 0), "address:unknown");
        let mut junk = HeaderMap::new();
        junk.insert(FORWARDED_FOR, "not-an-address".parse().unwrap());
        assert_eq!(client_key(&junk, peer, 1), "address:10.0.0.2");
        let v6 = Some("2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse().unwrap());
        assert_eq!(client_key(&headers, v6, 0), "address:2001:db8:1:2::/64");
        let mapped = Some("::ffff:192.0.2.8".parse().unwrap());
        assert_eq!(client_key(&headers, mapped, 0), "address:192.0.2.8");
    }
}

//! Where the server may send what a member supplied (a push subscription's
//! endpoint, an ntfy topic URL). Such a URL makes the server send requests
//! on a member's word, so unless the operator allows it
//! (`--push-allow-private-network`) it may not reach the server itself, its
//! home network or a cloud's metadata service. The rule is applied twice:
//! when the URL is submitted, for a clear 422, and on the address actually
//! connected to at every delivery, since a name that resolved to a public
//! address then may resolve elsewhere now (DNS rebinding).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::error::{ApiError, Result};

/// A name that takes longer to resolve at submission is not held against
/// the URL; delivery resolves it again.
const SUBMIT_RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an address is not one the server connects to for a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    Multicast,
    Broadcast,
    Reserved,
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Forbidden::Unspecified => "an unspecified address",
            Forbidden::Loopback => "a loopback address",
            Forbidden::Private => "a private network address",
            Forbidden::LinkLocal => "a link-local address",
            Forbidden::Multicast => "a multicast address",
            Forbidden::Broadcast => "the broadcast address",
            Forbidden::Reserved => "a reserved or documentation address",
        })
    }
}

/// The class of an address the rule refuses, or `None` for a public one.
pub fn classify(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Forbidden> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        // 0/8 is "this network": connecting to it reaches the host itself.
        (0, _, _) => Forbidden::Unspecified,
        (127, _, _) => Forbidden::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => Forbidden::Private,
        // Shared address space (RFC 6598): a carrier's or a tailnet's hosts.
        (100, 64..=127, _) => Forbidden::Private,
        (169, 254, _) => Forbidden::LinkLocal,
        (224..=239, _, _) => Forbidden::Multicast,
        _ if ip.is_broadcast() => Forbidden::Broadcast,
        (240..=255, _, _) => Forbidden::Reserved,
        // IETF protocol assignments, documentation, benchmarking, the old
        // 6to4 relay anycast.
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Forbidden::Reserved,
        (198, 18..=19, _) | (192, 88, 99) => Forbidden::Reserved,
        _ => return None,
    })
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Forbidden> {
    if ip.is_unspecified() {
        return Some(Forbidden::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Forbidden::Loopback);
    }
    // Forms that carry an IPv4 address are judged by it: mapped
    // (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let s = ip.segments();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return classify_v4(embedded_v4(s[1], s[2]));
    }
    Some(match s[0] {
        0xfc00..=0xfdff => Forbidden::Private,
        0xfe80..=0xfebf => Forbidden::LinkLocal,
        // Site-local (deprecated by RFC 3879, still private in practice).
        0xfec0..=0xfeff => Forbidden::Private,
        0xff00..=0xffff => Forbidden::Multicast,
        // Only 2000::/3 is global unicast; the rest (IPv4-compatible,
        // discard-only, local-use NAT64, ...) is not a push service.
        _ if s[0] & 0xe000 != 0x2000 => Forbidden::Reserved,
        // Documentation (2001:db8::/32, 3fff::/20), Teredo (2001::/32,
        // which hides an IPv4 address), benchmarking (2001:2::/48).
        0x2001 if s[1] == 0x0db8 || s[1] == 0 || (s[1] == 2 && s[2] == 0) => Forbidden::Reserved,
        0x3fff if s[1] < 0x1000 => Forbidden::Reserved,
        _ => return None,
    })
}

/// The address a URL's host spells out, if it is an address literal
/// (`[v6]` included). The URL parser has already turned other spellings of
/// an IPv4 address (`0x7f.1`, `2130706433`) into the dotted form.
fn literal(host: &str) -> Option<IpAddr> {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()
}

/// `localhost` and its subdomains are loopback by definition (RFC 6761),
/// whatever this machine's resolver says of them.
fn localhost_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// Submission-time check of a member-supplied URL: the class of the first
/// forbidden address its host is or resolves to, `None` when it may be
/// stored. A URL that does not parse is left to the caller's URL check; a
/// name that does not resolve now is accepted, because delivery resolves it
/// again and connects only to an allowed address.
pub async fn screen(url: &str, allow_private: bool) -> Option<Forbidden> {
    if allow_private {
        return None;
    }
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    let host = parsed.host_str()?;
    if let Some(ip) = literal(host) {
        return classify(ip);
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let lookup = tokio::net::lookup_host((host, port));
    match tokio::time::timeout(SUBMIT_RESOLVE_TIMEOUT, lookup).await {
        Ok(Ok(addrs)) => {
            let found: Vec<SocketAddr> = addrs.collect();
            match found.iter().find_map(|a| classify(a.ip())) {
                Some(class) => Some(class),
                None if found.is_empty() && localhost_name(host) => Some(Forbidden::Loopback),
                None => None,
            }
        }
        _ => localhost_name(host).then_some(Forbidden::Loopback),
    }
}

/// The 422 text for a refused URL; it names the class, never the address.
pub fn refusal_text(class: Forbidden) -> String {
    format!(
        "must not point at {class} (this server sends to such addresses only when started with --push-allow-private-network)"
    )
}

const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The outbound HTTP client's settings: rustls with the ring provider, no
/// redirects (a push service answers, it does not send us elsewhere).
pub fn client_builder() -> reqwest::ClientBuilder {
    // Installed once per process; a second call finds it installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("pillbox/", env!("CARGO_PKG_VERSION")))
}

/// A delivery refused by the rule (the error a request fails with).
#[derive(Debug, thiserror::Error)]
#[error("the destination is {0}, which this server does not send to")]
pub struct Refused(pub Forbidden);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Resolves a name for the HTTP client and keeps only the addresses the
/// rule allows: the client then connects to one of those, with no second
/// lookup between the check and the connection.
struct AllowedOnly;

impl Resolve for AllowedOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(allowed_addresses(name.as_str().to_string()))
    }
}

async fn allowed_addresses(host: String) -> std::result::Result<Addrs, BoxError> {
    let mut refused = None;
    let allowed: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
        .await?
        .filter(|addr| match classify(addr.ip()) {
            Some(class) => {
                refused.get_or_insert(class);
                false
            }
            None => true,
        })
        .collect();
    match (allowed.is_empty(), refused) {
        (true, Some(class)) => Err(Box::new(Refused(class))),
        (true, None) => Err("the name has no address".into()),
        (false, _) => Ok(Box::new(allowed.into_iter())),
    }
}

/// The HTTP client for member-supplied destinations. Unless private
/// networks are allowed, every name is resolved through [`AllowedOnly`] and
/// an address literal is checked before the request is built (a literal
/// never reaches a resolver). Proxies from the environment are ignored: a
/// proxy would make the connection itself, out of the rule's sight.
/// Redirects are not followed.
pub struct MemberClient {
    http: reqwest::Client,
    allow_private: bool,
}

impl MemberClient {
    pub fn new(allow_private: bool) -> Result<MemberClient> {
        let mut builder = client_builder().no_proxy();
        if !allow_private {
            builder = builder.dns_resolver(AllowedOnly);
        }
        let http = builder
            .build()
            .map_err(|e| ApiError::internal(format!("cannot start the HTTP client: {e}")))?;
        Ok(MemberClient {
            http,
            allow_private,
        })
    }

    /// A POST to `url`, or the class of the forbidden address it names.
    pub fn post(&self, url: &str) -> std::result::Result<reqwest::RequestBuilder, Forbidden> {
        if !self.allow_private {
            let host = reqwest::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().and_then(literal));
            if let Some(class) = host.and_then(classify) {
                return Err(class);
            }
        }
        Ok(self.http.post(url))
    }
}

/// The class the rule refused a failed request's destination for, if that
/// is why it failed.
pub fn refused(error: &reqwest::Error) -> Option<Forbidden> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(Refused(class)) = e.downcast_ref::<Refused>() {
            return Some(*class);
        }
        source = e.source();
    }
    None
}

/// The HTTP client for services the operator configured (an identity
/// provider, a terminology server, push services).
pub fn http_client() -> Result<reqwest::Client> {
    client_builder()
        .build()
        .map_err(|e| ApiError::internal(format!("cannot start the HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Option<Forbidden> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn each_forbidden_ipv4_range_is_named() {
        for (ip, expected) in [
            ("0.0.0.0", Forbidden::Unspecified),
            ("0.1.2.3", Forbidden::Unspecified),
            ("127.0.0.1", Forbidden::Loopback),
            ("127.255.1.2", Forbidden::Loopback),
            ("10.0.0.1", Forbidden::Private),
            ("172.16.0.1", Forbidden::Private),
            ("172.31.255.254", Forbidden::Private),
            ("192.168.1.10", Forbidden::Private),
            ("100.64.0.1", Forbidden::Private),
            ("100.127.255.254", Forbidden::Private),
            ("169.254.169.254", Forbidden::LinkLocal),
            ("169.254.0.1", Forbidden::LinkLocal),
            ("224.0.0.1", Forbidden::Multicast),
            ("239.255.255.250", Forbidden::Multicast),
            ("255.255.255.255", Forbidden::Broadcast),
            ("240.0.0.1", Forbidden::Reserved),
            ("192.0.0.8", Forbidden::Reserved),
            ("192.0.2.1", Forbidden::Reserved),
            ("198.51.100.7", Forbidden::Reserved),
            ("203.0.113.9", Forbidden::Reserved),
            ("198.18.0.1", Forbidden::Reserved),
        ] {
            assert_eq!(class(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn public_ipv4_addresses_pass_beside_the_edges_of_the_ranges() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.167.1.1",
            "192.169.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "223.255.255.255",
            "198.20.0.1",
            "142.250.74.14",
        ] {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn each_forbidden_ipv6_range_is_named_and_embedded_ipv4_is_judged_by_itself() {
        for (ip, expected) in [
            ("::", Forbidden::Unspecified),
            ("::1", Forbidden::Loopback),
            ("fc00::1", Forbidden::Private),
            ("fd12:3456:789a::1", Forbidden::Private),
            ("fe80::1", Forbidden::LinkLocal),
            ("febf::1", Forbidden::LinkLocal),
            ("fec0::1", Forbidden::Private),
            ("ff02::1", Forbidden::Multicast),
            ("2001:db8::1", Forbidden::Reserved),
            ("3fff::1", Forbidden::Reserved),
            ("2001::1", Forbidden::Reserved),
            ("100::1", Forbidden::Reserved),
            ("::127.0.0.1", Forbidden::Reserved),
            ("::ffff:127.0.0.1", Forbidden::Loopback),
            ("::ffff:169.254.169.254", Forbidden::LinkLocal),
            ("::ffff:10.1.2.3", Forbidden::Private),
            ("::ffff:0.0.0.0", Forbidden::Unspecified),
            ("64:ff9b::7f00:1", Forbidden::Loopback),
            ("64:ff9b::a9fe:a9fe", Forbidden::LinkLocal),
            ("2002:c0a8:0101::1", Forbidden::Private),
            ("2002:7f00:0001::1", Forbidden::Loopback),
        ] {
            assert_eq!(class(ip), Some(expected), "{ip}");
        }
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4009:81f::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn literals_are_read_from_url_hosts_and_localhost_names_are_loopback() {
        let host = |url: &str| {
            reqwest::Url::parse(url)
                .unwrap()
                .host_str()
                .and_then(literal)
        };
        assert_eq!(host("http://[::1]:8080/x"), Some("::1".parse().unwrap()));
        assert_eq!(host("http://0x7f.1/x"), Some("127.0.0.1".parse().unwrap()));
        assert_eq!(
            host("https://2852039166/latest"),
            Some("169.254.169.254".parse().unwrap())
        );
        assert_eq!(host("https://push.example.org/x"), None);
        for name in ["localhost", "LocalHost.", "ntfy.localhost"] {
            assert!(localhost_name(name), "{name}");
        }
        assert!(!localhost_name("localhost.example.org"));
        assert!(!localhost_name("notlocalhost"));
    }

    #[tokio::test]
    async fn screening_refuses_literals_and_loopback_names_unless_private_networks_are_allowed() {
        assert_eq!(
            screen("http://127.0.0.1:9/x", false).await,
            Some(Forbidden::Loopback)
        );
        assert_eq!(
            screen("https://localhost/x", false).await,
            Some(Forbidden::Loopback)
        );
        assert_eq!(
            screen("https://[fd00::5]/x", false).await,
            Some(Forbidden::Private)
        );
        assert_eq!(screen("http://127.0.0.1:9/x", true).await, None);
        assert_eq!(screen("https://8.8.8.8/x", false).await, None);
        assert_eq!(screen("not a url", false).await, None);
    }

    #[tokio::test]
    async fn the_delivery_resolver_keeps_no_forbidden_address() {
        let resolved = AllowedOnly.resolve("localhost".parse().unwrap()).await;
        let error = resolved
            .err()
            .expect("localhost has only loopback addresses");
        assert!(matches!(
            error.downcast_ref::<Refused>(),
            Some(Refused(Forbidden::Loopback))
        ));
    }
}

//! The client's address as a rate-limit key (who is asking, when nothing
//! else was verified), read the same way by every area that counts
//! failures by address.

use std::net::{IpAddr, Ipv6Addr};

use axum::http::HeaderMap;

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

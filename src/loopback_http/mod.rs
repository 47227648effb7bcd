//! What the two HTTP servers share — `him serve --http` (`mcp/http.rs`) and the loopback
//! form (`fallback/loopback.rs`), both on hyper: one accept loop ([`accept`]), connection
//! places ([`admission`]), whose process is calling ([`owner`]), and, here, which `Host` they
//! answer to and the security headers every response carries.

pub mod accept;
pub mod admission;
pub mod owner;

use std::net::SocketAddr;

use http::Response;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// `connect-src 'self'` is what lets the form's page post its answer; everything else is
/// closed. The MCP endpoint serves no documents, so there it only closes.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS: [(HeaderName, &str); 7] = [
    (header::CONTENT_SECURITY_POLICY, CSP),
    (header::CACHE_CONTROL, "no-store"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (
        HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    ),
    (
        HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    ),
];

/// The response with the security headers both servers send on every answer.
pub fn secure<B>(mut response: Response<B>) -> Response<B> {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// More than one `Host` line: RFC 9112 §3.2 has the server answer 400, whatever the names,
/// since a proxy and this server might each read a different one.
pub fn repeated_host(headers: &HeaderMap) -> bool {
    headers.get_all(header::HOST).iter().nth(1).is_some()
}

/// The `Host` values a server answers to, as `name:port` (DNS rebinding: a page of
/// evil.example resolved to 127.0.0.1 sends `Host: evil.example`).
#[derive(Debug, Clone)]
pub struct HostRule {
    allowed: Vec<String>,
}

impl HostRule {
    /// Exactly these `name:port` values, lowercase.
    pub fn only(allowed: Vec<String>) -> HostRule {
        HostRule { allowed }
    }

    /// A loopback server's own address and port, and `localhost` with that port.
    pub fn loopback(bound: SocketAddr) -> HostRule {
        HostRule::only(vec![
            bound.to_string(),
            format!("localhost:{}", bound.port()),
        ])
    }

    pub fn allowed(&self) -> &[String] {
        &self.allowed
    }

    pub fn admits(&self, host: Option<&[u8]>) -> bool {
        let Some(host) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
            return false;
        };
        let host = host.trim().to_ascii_lowercase();
        let with_port = match split_host_port(&host) {
            Some((name, Some(port))) => format!("{name}:{port}"),
            // HTTP leaves out port 80.
            Some((name, None)) => format!("{name}:80"),
            None => return false,
        };
        self.allowed.contains(&with_port)
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` when the port is not a number.
pub fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &authority[..end + 2];
        match &rest[end + 1..] {
            "" => (host, None),
            tail => (host, Some(tail.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_must_be_the_bound_address_or_localhost_with_its_port() {
        let rule = HostRule::loopback("127.0.0.1:7676".parse().unwrap());
        let admits = |h: &str| rule.admits(Some(h.as_bytes()));
        assert!(admits("127.0.0.1:7676"));
        assert!(admits("LOCALHOST:7676"));
        assert!(!admits("127.0.0.1:7677"));
        assert!(!admits("127.0.0.1"));
        assert!(!admits("evil.example:7676"));
        assert!(!admits("localhost"));
        assert!(!rule.admits(None));
        let v6 = HostRule::loopback("[::1]:80".parse().unwrap());
        assert!(v6.admits(Some(b"[::1]")));
        assert!(v6.admits(Some(b"localhost")));
    }

    #[test]
    fn a_rule_of_one_name_admits_only_that_name() {
        let rule = HostRule::only(vec!["127.0.0.1:4000".into()]);
        assert!(rule.admits(Some(b"127.0.0.1:4000")));
        for other in [
            "localhost:4000",
            "127.0.0.1:4001",
            "127.0.0.1",
            "evil.example",
        ] {
            assert!(!rule.admits(Some(other.as_bytes())), "{other}");
        }
    }

    #[test]
    fn two_host_lines_are_told_apart_from_one() {
        let mut headers = HeaderMap::new();
        assert!(!repeated_host(&headers));
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:4000"));
        assert!(!repeated_host(&headers));
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:4000"));
        assert!(repeated_host(&headers));
    }

    #[test]
    fn every_response_gets_the_security_headers() {
        let response = secure(Response::new(()));
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
        assert_eq!(headers[header::CACHE_CONTROL], "no-store");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(headers["cross-origin-resource-policy"], "same-origin");
        assert_eq!(headers["cross-origin-opener-policy"], "same-origin");
    }
}

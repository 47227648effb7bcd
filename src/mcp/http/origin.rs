//! Who may talk to the HTTP endpoint, judged from the request's `Host` and `Origin`
//! headers before anything else, and the CORS answers for the origins that may.
//!
//! The MCP Streamable HTTP transport requires servers to validate `Origin` on every request
//! (DNS rebinding: a web page the person visits must not be able to reach a loopback
//! server). Browsers always send `Origin` on cross-origin requests, so a request without
//! one comes from a program (an MCP client), and those pass; a request with one passes only
//! when that exact origin was allowed with `--allow-origin`, or is the server's own loopback
//! origin (`http://127.0.0.1:<port>`, `http://localhost:<port>`), which no other page can
//! have. `Host` is checked too (`crate::loopback_http::HostRule`), so a page on a rebound DNS name
//! is refused even if a browser someday omits `Origin`.

use std::net::SocketAddr;

use crate::loopback_http::split_host_port;

/// Request headers a page may send (CORS preflight answer). `Mcp-Method` and `Mcp-Name`
/// are the standard headers newer MCP protocol versions add to every request.
pub const ALLOW_HEADERS: &str = "Authorization, Content-Type, Accept, Mcp-Session-Id, \
                                 Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name";
pub const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// Response headers a page may read: the session id it must send back.
pub const EXPOSE_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate";
/// How long a browser may cache a preflight answer, in seconds.
pub const PREFLIGHT_MAX_AGE: &str = "600";

/// An `--allow-origin` value that cannot name a single origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginError {
    pub value: String,
    pub reason: &'static str,
}

impl std::fmt::Display for OriginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--allow-origin {:?}: {}; give scheme://host[:port], e.g. \
             chrome-extension://<extension id> or http://localhost:3000",
            self.value, self.reason
        )
    }
}

impl std::error::Error for OriginError {}

/// An origin in the browser's serialization: lowercase `scheme://host[:port]`, the port
/// left out when it is the scheme's default, no trailing slash.
pub fn normalize_origin(value: &str) -> Result<String, OriginError> {
    let err = |reason| OriginError {
        value: value.to_owned(),
        reason,
    };
    let trimmed = value.trim();
    if trimmed.eq_ignore_ascii_case("null") {
        return Err(err(
            "\"null\" is the origin of every sandboxed page and local file, so it cannot be trusted",
        ));
    }
    if trimmed.contains('*') {
        return Err(err("wildcards are not allowed; name each origin"));
    }
    let (scheme, rest) = trimmed
        .split_once("://")
        .ok_or_else(|| err("it has no scheme"))?;
    let scheme = scheme.to_ascii_lowercase();
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return Err(err("the scheme is not valid"));
    }
    // `chrome-extension://<id>/` is how extension origins are often written.
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() {
        return Err(err("it has no host"));
    }
    if authority
        .chars()
        .any(|c| matches!(c, '/' | '?' | '#' | '@' | '\\') || c.is_whitespace() || c.is_control())
    {
        return Err(err("an origin has no path, query, fragment or user part"));
    }
    let (host, port) = split_host_port(authority).ok_or_else(|| err("the port is not valid"))?;
    if host.is_empty() {
        return Err(err("it has no host"));
    }
    let host = host.to_ascii_lowercase();
    let port = port.filter(|p| Some(*p) != default_port(&scheme));
    Ok(match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The origins given with `--allow-origin`, normalized, and the server's own.
#[derive(Debug, Clone, Default)]
pub struct AllowedOrigins {
    origins: Vec<String>,
    own: Vec<String>,
}

/// What the `Origin` header says about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginVerdict {
    /// No `Origin`: not a browser page (or a same-origin GET, which cannot happen here).
    Absent,
    /// A page from an origin allowed with `--allow-origin`; CORS answers echo this value.
    Allowed(String),
    /// A page of the server's own loopback origin; answered as `Allowed`.
    Own(String),
    /// A page from anywhere else, or a header that is not an origin.
    Refused(String),
}

impl AllowedOrigins {
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<AllowedOrigins, OriginError> {
        let mut origins = Vec::new();
        for value in values {
            let origin = normalize_origin(value.as_ref())?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(AllowedOrigins {
            origins,
            own: Vec::new(),
        })
    }

    /// Also accepts the origins of the server itself on loopback address `bound`: a page
    /// there is served by this server, so it cannot be someone else's (the MCP conformance
    /// suite's DNS-rebinding check calls with one).
    pub fn with_own_loopback(mut self, bound: SocketAddr) -> AllowedOrigins {
        let port = bound.port();
        let names = [bound.to_string(), format!("localhost:{port}")];
        self.own = names
            .iter()
            .filter_map(|name| normalize_origin(&format!("http://{name}")).ok())
            .collect();
        self
    }

    pub fn list(&self) -> &[String] {
        &self.origins
    }

    /// Judges the request's `Origin` header values (there should be at most one).
    pub fn judge<'a>(&self, mut values: impl Iterator<Item = &'a [u8]>) -> OriginVerdict {
        let Some(first) = values.next() else {
            return OriginVerdict::Absent;
        };
        let shown = String::from_utf8_lossy(first).into_owned();
        if values.next().is_some() {
            return OriginVerdict::Refused(shown);
        }
        match std::str::from_utf8(first).map(normalize_origin) {
            Ok(Ok(origin)) if self.origins.contains(&origin) => OriginVerdict::Allowed(shown),
            Ok(Ok(origin)) if self.own.contains(&origin) => OriginVerdict::Own(shown),
            _ => OriginVerdict::Refused(shown),
        }
    }
}

/// What a refused page's owner can do, for the 403 and the log: allow that exact origin,
/// or, when it cannot be allowed (`null`, a wildcard, not an origin at all), what works
/// instead.
pub fn advice_for_refused(origin: &str) -> String {
    match normalize_origin(origin) {
        Ok(origin) => format!(
            "pages from {origin} may not call this server; its owner can allow them with \
             `him serve --http --allow-origin {origin}`"
        ),
        Err(err) => format!(
            "pages with Origin {origin:?} may not call this server, and cannot be allowed: {}. \
             Serve the page from an origin of its own (e.g. http://localhost:3000) and allow \
             that with `him serve --http --allow-origin <origin>`, or call from a program, \
             which sends no Origin",
            err.reason
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized_as_browsers_send_them() {
        assert_eq!(
            normalize_origin("chrome-extension://abcdefghijklmnop/").unwrap(),
            "chrome-extension://abcdefghijklmnop"
        );
        assert_eq!(
            normalize_origin("HTTP://LocalHost:3000").unwrap(),
            "http://localhost:3000"
        );
        assert_eq!(
            normalize_origin("https://chat.example:443").unwrap(),
            "https://chat.example"
        );
        assert_eq!(
            normalize_origin("http://[::1]:8080").unwrap(),
            "http://[::1]:8080"
        );
    }

    #[test]
    fn values_that_are_not_one_origin_are_refused_with_a_reason() {
        for bad in [
            "null",
            "*",
            "https://*.example",
            "localhost:3000",
            "https://chat.example/path",
            "https://user@chat.example",
            "https://chat.example:99999",
            "https://chat.example:",
            "https://",
            "1http://x",
        ] {
            let err = normalize_origin(bad).unwrap_err();
            assert!(err.to_string().contains("scheme://host"), "{bad}: {err}");
        }
    }

    #[test]
    fn only_an_exactly_allowed_origin_passes() {
        let allowed = AllowedOrigins::parse(&[
            "chrome-extension://abcdefghijklmnop/",
            "http://localhost:3000",
        ])
        .unwrap();
        let judge = |values: &[&str]| allowed.judge(values.iter().map(|v| v.as_bytes()));
        assert_eq!(judge(&[]), OriginVerdict::Absent);
        assert_eq!(
            judge(&["chrome-extension://abcdefghijklmnop"]),
            OriginVerdict::Allowed("chrome-extension://abcdefghijklmnop".into())
        );
        assert!(matches!(
            judge(&["http://localhost:3000"]),
            OriginVerdict::Allowed(_)
        ));
        for refused in [
            "http://localhost:3001",
            "https://localhost:3000",
            "http://localhost",
            "chrome-extension://otherextension",
            "null",
            "http://evil.example",
        ] {
            assert!(
                matches!(judge(&[refused]), OriginVerdict::Refused(_)),
                "{refused}"
            );
        }
        assert!(matches!(
            judge(&["http://localhost:3000", "http://localhost:3000"]),
            OriginVerdict::Refused(_)
        ));
    }
    #[test]
    fn the_servers_own_loopback_origins_pass_without_being_listed() {
        let allowed = AllowedOrigins::parse::<&str>(&[])
            .unwrap()
            .with_own_loopback("127.0.0.1:7676".parse().unwrap());
        let judge = |value: &str| allowed.judge(std::iter::once(value.as_bytes()));
        assert!(matches!(
            judge("http://127.0.0.1:7676"),
            OriginVerdict::Own(_)
        ));
        assert!(matches!(
            judge("http://LOCALHOST:7676"),
            OriginVerdict::Own(_)
        ));
        for refused in [
            "http://127.0.0.1:7677",
            "https://127.0.0.1:7676",
            "http://localhost",
            "http://127.0.0.2:7676",
            "null",
        ] {
            assert!(
                matches!(judge(refused), OriginVerdict::Refused(_)),
                "{refused}"
            );
        }
        let on_80 = AllowedOrigins::default().with_own_loopback("[::1]:80".parse().unwrap());
        assert!(matches!(
            on_80.judge(std::iter::once(&b"http://[::1]"[..])),
            OriginVerdict::Own(_)
        ));
    }

    #[test]
    fn the_advice_for_a_refused_origin_never_names_a_value_that_is_refused_too() {
        let advice = advice_for_refused("HTTPS://Chat.Example");
        assert!(
            advice.contains("--allow-origin https://chat.example`"),
            "{advice}"
        );
        for unallowable in ["null", "*", "not an origin"] {
            let advice = advice_for_refused(unallowable);
            assert!(
                !advice.contains(&format!("--allow-origin {unallowable}")),
                "{advice}"
            );
            assert!(advice.contains("cannot be allowed"), "{advice}");
            assert!(advice.contains("--allow-origin <origin>"), "{advice}");
        }
    }
}

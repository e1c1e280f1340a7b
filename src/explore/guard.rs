//! Who may read the explorer and what every response says about itself (`spec/explorer.md`
//! §4, §5): the access token, the Host check against DNS rebinding, the cross-site POST
//! refusal, and the security headers (Content-Security-Policy first).

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The Content-Security-Policy of every response: nothing may load but the explorer's own
/// stylesheet and images, no script of any origin runs (no `script-src`: `default-src 'none'`
/// covers it), forms post only to the explorer, no page may frame it.
pub(super) const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                       form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The cookie that carries the token after the first `?token=` visit.
const COOKIE: &str = "memlineage_token";

/// Shortest accepted token, in characters.
pub(crate) const MIN_TOKEN_CHARS: usize = 16;
/// Longest accepted token, in characters.
pub(crate) const MAX_TOKEN_CHARS: usize = 256;

/// An access token: 16 to 256 characters of `A-Z a-z 0-9 - . _ ~` (safe in a query string and
/// a cookie unescaped).
#[derive(Clone)]
pub struct Token(String);

/// A `--token` the explorer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Fewer than 16 or more than 256 characters.
    #[error("a token has {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters, not {0}")]
    Length(usize),
    /// A character outside `A-Z a-z 0-9 - . _ ~`.
    #[error("a token is made of A-Z a-z 0-9 - . _ ~ only")]
    Charset,
}

impl Token {
    /// Parses a token.
    ///
    /// # Errors
    /// [`TokenError`] as described there. Does not panic.
    pub fn new(s: &str) -> Result<Token, TokenError> {
        let n = s.chars().count();
        if !(MIN_TOKEN_CHARS..=MAX_TOKEN_CHARS).contains(&n) {
            return Err(TokenError::Length(n));
        }
        if !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        {
            return Err(TokenError::Charset);
        }
        Ok(Token(s.to_string()))
    }

    /// Constant-time comparison with what a request presented.
    fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// Who may read: anyone on this machine (loopback only, the default), or whoever presents
/// the token (any address).
#[derive(Clone, Debug, Default)]
pub struct Access {
    token: Option<Token>,
}

impl Access {
    /// Loopback only, no token.
    pub fn loopback() -> Access {
        Access { token: None }
    }

    /// Every request must present `token` (`Authorization: Bearer`, the cookie, or `?token=`).
    pub fn with_token(token: Token) -> Access {
        Access { token: Some(token) }
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// What to do with a request: pass it on, or answer it here (boxed: a response is
    /// large, and passing on is the common case).
    fn admit(&self, req: &Request) -> Result<(), Box<Response>> {
        let headers = req.headers();
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        match &self.token {
            None if !is_loopback_host(host) => {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "this explorer answers only requests addressed to a loopback host",
                ))
            }
            None => {}
            Some(t) => self.check_token(t, req)?,
        }
        if req.method() != Method::GET && req.method() != Method::HEAD && cross_site(headers, host)
        {
            return Err(refuse(StatusCode::FORBIDDEN, "cross-site request refused"));
        }
        Ok(())
    }

    fn check_token(&self, token: &Token, req: &Request) -> Result<(), Box<Response>> {
        let headers = req.headers();
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='));
        if bearer.or(cookie).is_some_and(|p| token.matches(p)) {
            return Ok(());
        }
        let query = req
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix("token="));
        match query {
            // First visit with the token in the address: remember it in a cookie (HttpOnly,
            // same site only) and drop it from the address bar.
            Some(q) if token.matches(q) && req.method() == Method::GET => {
                let cookie = format!("{COOKIE}={q}; HttpOnly; SameSite=Strict; Path=/");
                let location = same_site_location(req.uri());
                let mut resp = (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, location.as_str())],
                )
                    .into_response();
                if let Ok(v) = HeaderValue::from_str(&cookie) {
                    resp.headers_mut().insert(header::SET_COOKIE, v);
                }
                Err(Box::new(resp))
            }
            _ => Err(refuse(
                StatusCode::UNAUTHORIZED,
                "this explorer needs its access token: open it as /?token=TOKEN, or send \
                 Authorization: Bearer TOKEN",
            )),
        }
    }
}

/// Middleware: admits or refuses the request, then adds the security headers to whatever
/// the answer is.
pub(super) async fn guard(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    let mut resp = match access.admit(&req) {
        Ok(()) => next.run(req).await,
        Err(resp) => *resp,
    };
    security_headers(resp.headers_mut());
    resp
}

/// The headers every response carries (`spec/explorer.md` §4.2).
fn security_headers(h: &mut HeaderMap) {
    let set = |h: &mut HeaderMap, name: HeaderName, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(h, header::CONTENT_SECURITY_POLICY, CSP);
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::REFERRER_POLICY, "no-referrer");
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(h, header::CACHE_CONTROL, "no-store");
    set(
        h,
        HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    set(
        h,
        HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    );
}

/// A plain-text refusal.
fn refuse(status: StatusCode, why: &'static str) -> Box<Response> {
    Box::new(
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            why,
        )
            .into_response(),
    )
}

/// Whether the Host header names a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`),
/// with or without a port. A page from elsewhere that rebinds its own name to 127.0.0.1 sends
/// its own name here and is refused.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a state-changing request comes from another site: a browser names the page's
/// origin (`Origin`) or says so (`Sec-Fetch-Site`).
fn cross_site(headers: &HeaderMap, host: &str) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if fetch_site.is_some_and(|s| s != "same-origin" && s != "none") {
        return true;
    }
    match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => origin != format!("http://{host}"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1:8080",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example:8080",
            "10.0.0.1:80",
            "",
            "[::2]:80",
            "localhost.evil:80",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn token_rules() {
        assert_eq!(Token::new("short").err(), Some(TokenError::Length(5)));
        assert_eq!(
            Token::new("0123456789abcdef;x").err(),
            Some(TokenError::Charset)
        );
        assert_eq!(
            TokenError::Length(5).to_string(),
            "a token has 16 to 256 characters, not 5"
        );
        assert_eq!(
            TokenError::Charset.to_string(),
            "a token is made of A-Z a-z 0-9 - . _ ~ only"
        );
        let t = Token::new("0123456789abcdef").unwrap();
        assert!(t.matches("0123456789abcdef"));
        assert!(!t.matches("0123456789abcdeg"));
        assert!(!t.matches("0123456789abcdef0"));
    }
}

/// Where the first `?token=` visit is sent on: the same path and query without the token,
/// and always a path on this server. A path that a browser would read as another host
/// (`//evil.example/`, `/\\evil.example`) becomes `/` (review finding: an open redirect).
fn same_site_location(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    let path = if path.starts_with("//") || path.starts_with("/\\") || !path.starts_with('/') {
        "/"
    } else {
        path
    };
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("token="))
        .collect();
    if rest.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", rest.join("&"))
    }
}

#[cfg(test)]
mod redirect_tests {
    use super::same_site_location;

    #[test]
    fn the_token_redirect_stays_on_this_server_and_keeps_the_query() {
        let at = |u: &str| same_site_location(&u.parse().unwrap());
        assert_eq!(at("/entries?token=T&kind=prompt"), "/entries?kind=prompt");
        assert_eq!(at("/?token=T"), "/");
        assert_eq!(at("//evil.example/?token=T"), "/");
        assert_eq!(at("/\\evil.example?token=T"), "/");
        assert_eq!(at("/entry/ab?page=2&token=T"), "/entry/ab?page=2");
    }
}

//! Server endpoint and credential values: parses and validates the base URL and the
//! `Authorization` header value. Never echoes the rejected input in an error (it may hold a token).

use std::fmt;

/// A validated PowerContext Server base URL: `https://host[:port][/path]`, or plain `http://` to a
/// loopback host only, without userinfo, query or fragment; a trailing `/` or `/mcp` is removed.
#[derive(Clone, PartialEq, Eq)]
pub struct BaseUrl {
    url: String,
    host: String,
    https: bool,
}

/// Why a base URL was rejected. Content-free: it never holds the URL itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// Empty after trimming.
    #[error("is empty")]
    Empty,
    /// Scheme other than `http`/`https`.
    #[error("must start with `https://` (or `http://` for a loopback Server)")]
    Scheme,
    /// Plain `http` to a non-loopback host.
    #[error("uses plain `http://` for a host that is not loopback; use `https://`")]
    InsecureRemote,
    /// Contains `user:pass@`.
    #[error("must not contain credentials (`user@`); use the authorization setting")]
    Userinfo,
    /// Contains `?` or `#`.
    #[error("must not contain a query or fragment")]
    QueryOrFragment,
    /// Host missing or malformed, or a bad port.
    #[error("has a missing or malformed host or port")]
    Host,
    /// Whitespace or control characters.
    #[error("contains whitespace or control characters")]
    Characters,
}

impl BaseUrl {
    /// Parses and normalizes a base URL (or the Server's MCP URL ending in `/mcp`).
    ///
    /// # Errors
    /// Returns the [`UrlProblem`] that makes the value unusable.
    pub fn parse(raw: &str) -> Result<Self, UrlProblem> {
        Self::parse_with(raw, false)
    }

    /// Like [`BaseUrl::parse`], but plain `http://` to a remote host is accepted: only for a URL
    /// the user consented to (the official CLI's `allow_insecure_http` for that exact endpoint)
    /// or for comparing endpoints.
    ///
    /// # Errors
    /// Returns the [`UrlProblem`] that makes the value unusable.
    pub fn parse_insecure(raw: &str) -> Result<Self, UrlProblem> {
        Self::parse_with(raw, true)
    }

    fn parse_with(raw: &str, allow_insecure: bool) -> Result<Self, UrlProblem> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(UrlProblem::Empty);
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(UrlProblem::Characters);
        }
        if raw.contains(['?', '#']) {
            return Err(UrlProblem::QueryOrFragment);
        }
        let (scheme, rest) = raw.split_once("://").ok_or(UrlProblem::Scheme)?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(UrlProblem::Scheme),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(UrlProblem::Userinfo);
        }
        let host = parse_host(authority)?;
        if !https && !allow_insecure && !is_loopback_host(&host) {
            return Err(UrlProblem::InsecureRemote);
        }
        let mut path = path.trim_end_matches('/');
        if let Some(stripped) = path.strip_suffix("/mcp") {
            path = stripped.trim_end_matches('/');
        }
        if path.contains("//") {
            return Err(UrlProblem::Host);
        }
        let url = format!(
            "{}://{}{}",
            if https { "https" } else { "http" },
            authority.to_ascii_lowercase(),
            path
        );
        Ok(Self { url, host, https })
    }

    /// The normalized base, without a trailing slash.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.url
    }

    /// The full URL of an API path such as `/v1/context/prepare`.
    #[must_use]
    pub fn join(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// Whether the host is a loopback address or `localhost`.
    #[must_use]
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }

    /// Whether the scheme is `https`.
    #[must_use]
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The lowercase host name (IPv6 without brackets).
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }
}

impl fmt::Debug for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

fn parse_host(authority: &str) -> Result<String, UrlProblem> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or(UrlProblem::Host)?;
        if h.is_empty() || !h.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return Err(UrlProblem::Host);
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or(UrlProblem::Host)?),
        };
        (h.to_ascii_lowercase(), port)
    } else {
        let (h, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if h.is_empty()
            || !h
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
        {
            return Err(UrlProblem::Host);
        }
        (h.to_ascii_lowercase(), port)
    };
    if let Some(port) = port
        && (port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) || port.parse::<u16>().is_err())
    {
        return Err(UrlProblem::Host);
    }
    Ok(host)
}

/// Whether a host name is loopback: `localhost`, `127.0.0.0/8` or `::1`.
#[must_use]
pub fn is_loopback_host(host: &str) -> bool {
    if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" {
        return true;
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4 && parts[0] == "127" && parts.iter().all(|p| p.parse::<u8>().is_ok())
}

/// A validated `Authorization` header value: `Bearer <credential>` where the credential is
/// printable ASCII without whitespace. `Debug` never shows the credential.
#[derive(Clone, PartialEq, Eq)]
pub struct Authorization(String);

/// Why an authorization value was rejected. Content-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthProblem {
    /// Not of the form `Bearer <token>`.
    #[error("must be `Bearer <token>`")]
    Scheme,
    /// The token is empty, too long, or has whitespace, control or non-ASCII characters.
    #[error("must hold one token of printable ASCII without spaces (at most 8192 characters)")]
    Token,
}

impl Authorization {
    /// Parses a full header value, which must use the Bearer scheme (case-insensitive).
    ///
    /// # Errors
    /// Returns the [`AuthProblem`].
    pub fn parse_header(raw: &str) -> Result<Self, AuthProblem> {
        let value = raw.trim();
        let (scheme, token) = value.split_once(' ').ok_or(AuthProblem::Scheme)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthProblem::Scheme);
        }
        Self::from_token(token)
    }

    /// Builds the header from a bare token (as in `POWERCONTEXT_CLIENT_API_TOKEN`); a value that
    /// already starts with `Bearer ` is accepted too.
    ///
    /// # Errors
    /// Returns the [`AuthProblem`].
    pub fn parse_token(raw: &str) -> Result<Self, AuthProblem> {
        let value = raw.trim();
        match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Self::from_token(token),
            _ => Self::from_token(value),
        }
    }

    fn from_token(token: &str) -> Result<Self, AuthProblem> {
        if token.is_empty() || token.len() > 8192 || !token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(AuthProblem::Token);
        }
        Ok(Self(format!("Bearer {token}")))
    }

    /// The header value to send.
    #[must_use]
    pub fn header_value(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer <redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_loopback_http_and_strips_mcp() {
        let u = BaseUrl::parse(" http://127.0.0.1:8000/mcp/ ").unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:8000");
        assert!(u.is_loopback());
        assert_eq!(
            BaseUrl::parse("http://localhost:1").unwrap().as_str(),
            "http://localhost:1"
        );
        assert_eq!(
            BaseUrl::parse("http://[::1]:8000").unwrap().as_str(),
            "http://[::1]:8000"
        );
        assert_eq!(
            BaseUrl::parse("https://Memory.Example/api/mcp/")
                .unwrap()
                .as_str(),
            "https://memory.example/api"
        );
    }

    #[test]
    fn rejects_unsafe_urls() {
        assert_eq!(
            BaseUrl::parse("http://memory.example"),
            Err(UrlProblem::InsecureRemote)
        );
        assert_eq!(
            BaseUrl::parse("http://10.0.0.1:8000"),
            Err(UrlProblem::InsecureRemote)
        );
        assert_eq!(
            BaseUrl::parse("https://u:p@memory.example"),
            Err(UrlProblem::Userinfo)
        );
        assert_eq!(
            BaseUrl::parse("https://memory.example/?a=1"),
            Err(UrlProblem::QueryOrFragment)
        );
        assert_eq!(
            BaseUrl::parse("https://memory.example/#x"),
            Err(UrlProblem::QueryOrFragment)
        );
        assert_eq!(BaseUrl::parse("file:///tmp/x"), Err(UrlProblem::Scheme));
        assert_eq!(BaseUrl::parse("ftp://memory.example"), Err(UrlProblem::Scheme));
        assert_eq!(BaseUrl::parse("memory.example"), Err(UrlProblem::Scheme));
        assert_eq!(BaseUrl::parse(""), Err(UrlProblem::Empty));
        assert_eq!(BaseUrl::parse("https://"), Err(UrlProblem::Host));
        assert_eq!(BaseUrl::parse("https://h:99999"), Err(UrlProblem::Host));
        assert_eq!(BaseUrl::parse("https://h:"), Err(UrlProblem::Host));
        assert_eq!(BaseUrl::parse("https://a b"), Err(UrlProblem::Characters));
        assert_eq!(
            BaseUrl::parse("http://127.0.0.1.evil.example"),
            Err(UrlProblem::InsecureRemote)
        );
    }

    #[test]
    fn bearer_rules() {
        assert_eq!(
            Authorization::parse_header("Bearer abc").unwrap().header_value(),
            "Bearer abc"
        );
        assert_eq!(
            Authorization::parse_header("bearer abc").unwrap().header_value(),
            "Bearer abc"
        );
        assert_eq!(Authorization::parse_header("Basic abc"), Err(AuthProblem::Scheme));
        assert_eq!(Authorization::parse_header("abc"), Err(AuthProblem::Scheme));
        assert_eq!(Authorization::parse_header("Bearer "), Err(AuthProblem::Scheme));
        assert_eq!(
            Authorization::parse_header("Bearer token with spaces"),
            Err(AuthProblem::Token)
        );
        assert_eq!(
            Authorization::parse_header("Bearer tok\nen"),
            Err(AuthProblem::Token)
        );
        assert_eq!(
            Authorization::parse_header("Bearer tökén"),
            Err(AuthProblem::Token)
        );
        assert_eq!(
            Authorization::parse_token("abc").unwrap().header_value(),
            "Bearer abc"
        );
        assert_eq!(
            Authorization::parse_token("Bearer abc").unwrap().header_value(),
            "Bearer abc"
        );
        assert!(!format!("{:?}", Authorization::parse_token("secret-token").unwrap()).contains("secret"));
    }
}

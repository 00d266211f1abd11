//! The one HTTP transport: ureq with rustls, JSON POST/GET under the process deadline, redirects
//! never followed (any 3xx is an invalid response and nothing is sent to its target), response
//! bodies capped at 1 MiB, and an explicit proxy policy. It never logs bodies or headers.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use crate::deadline::Deadline;
use crate::endpoint::{Authorization, BaseUrl};
use crate::env::Env;
use crate::outcome::{Failure, Outcome};

/// Largest response body read, declared or not.
pub const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// Largest response head (status line and headers) accepted.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// The `User-Agent` sent with every request.
pub const USER_AGENT: &str = concat!("powercontext-hooks/", env!("CARGO_PKG_VERSION"));

/// A Server connection: base URL, credentials, timeouts.
#[derive(Clone)]
pub struct Transport {
    agent: ureq::Agent,
    base: BaseUrl,
    authorization: Option<Authorization>,
    request_timeout: Duration,
    deadline: Deadline,
}

/// What a JSON call accepts.
const JSON: &str = "application/json";

/// A response that arrived, with its status and JSON body (`Null` when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Parsed body.
    pub body: Value,
    /// Whether the body parsed as JSON.
    pub json: bool,
    /// The `ETag` header, when the Server sent one (conditional updates quote it back).
    pub etag: Option<String>,
}

/// Why no usable reply arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The per-request timeout or the process deadline ran out.
    #[error("timed out")]
    Timeout,
    /// Could not connect, or the connection broke.
    #[error("server unavailable")]
    Unavailable,
    /// A 3xx answer: never followed.
    #[error("redirect refused")]
    Redirect(u16),
    /// The body is larger than [`MAX_BODY_BYTES`].
    #[error("response body too large")]
    BodyTooLarge(u16),
}

impl HttpError {
    /// The failure class of this error.
    #[must_use]
    pub fn failure(self) -> Failure {
        match self {
            Self::Timeout => Failure::new(Outcome::Timeout),
            Self::Unavailable => Failure::new(Outcome::ServerUnavailable),
            Self::Redirect(s) => Failure {
                outcome: Outcome::InvalidResponse,
                http_status: Some(s),
                detail: Some("redirect"),
            },
            Self::BodyTooLarge(s) => Failure {
                outcome: Outcome::InvalidResponse,
                http_status: Some(s),
                detail: Some("body_too_large"),
            },
        }
    }
}

/// The proxy to use for a base URL: none for loopback or plain http; for remote `https`, the
/// standard variables (`HTTPS_PROXY`, `ALL_PROXY`, lowercase too) unless `NO_PROXY` names the host.
#[must_use]
pub fn proxy_for(base: &BaseUrl, env: &Env) -> Option<String> {
    proxy_variable(base, env).map(|(_, value)| value)
}

/// [`proxy_for`], with the name of the variable that set it.
fn proxy_variable(base: &BaseUrl, env: &Env) -> Option<(&'static str, String)> {
    if base.is_loopback() || !base.is_https() {
        return None;
    }
    let no_proxy = env
        .text("NO_PROXY")
        .or_else(|| env.text("no_proxy"))
        .unwrap_or("");
    let host = base.host().trim_end_matches('.');
    let excluded = no_proxy
        .split(',')
        .map(|e| no_proxy_host(e.trim()))
        .filter(|e| !e.is_empty())
        .any(|entry| entry == "*" || host == entry || host.ends_with(&format!(".{entry}")));
    if excluded {
        return None;
    }
    ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
        .into_iter()
        .find_map(|n| {
            env.text(n)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (n, v.trim().to_owned()))
        })
}

/// The host a `NO_PROXY` entry names, as [`BaseUrl::host`] spells hosts: lowercase, without a
/// leading `*.`/`.`, a trailing `.`, a `:port` or IPv6 brackets (curl's reading of the variable).
fn no_proxy_host(entry: &str) -> String {
    let entry = entry.to_ascii_lowercase();
    let entry = entry.trim_start_matches("*.").trim_start_matches('.');
    let host = if let Some(rest) = entry.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        match entry.rsplit_once(':') {
            Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => entry,
        }
    };
    host.trim_end_matches('.').to_owned()
}

/// Parses a proxy variable's value into a proxy this build can use: an HTTP(S) `CONNECT` proxy.
/// A SOCKS proxy is refused (this build has no SOCKS support, and ureq panics on one at connect
/// time rather than erroring), as is anything unparsable.
fn usable_proxy(value: &str) -> Option<ureq::Proxy> {
    let proxy = ureq::Proxy::new(value).ok()?;
    matches!(
        proxy.protocol(),
        ureq::ProxyProtocol::Http | ureq::ProxyProtocol::Https
    )
    .then_some(proxy)
}

impl Transport {
    /// Builds a transport. An unusable proxy variable is reported as the name of the variable.
    ///
    /// # Errors
    /// The name of the proxy variable that could not be parsed or names a kind of proxy this
    /// build cannot use (SOCKS).
    pub fn new(
        base: BaseUrl,
        authorization: Option<Authorization>,
        request_timeout: Duration,
        deadline: Deadline,
        env: &Env,
    ) -> Result<Self, &'static str> {
        let proxy = match proxy_variable(&base, env) {
            Some((name, value)) => Some(usable_proxy(&value).ok_or(name)?),
            None => None,
        };
        // ureq zeroes its buffers for every connection, and each fresh page is a page fault:
        // over plain HTTP with no proxy (no TLS anywhere) the input buffer only has to hold the
        // response head, capped below; a TLS record needs up to 16 KiB plus its overhead. The
        // output buffer keeps 16 KiB on every transport: each request header line must fit in it
        // whole, and a token may be 8192 characters after `authorization: Bearer `.
        let plain = !base.is_https() && proxy.is_none();
        let (input_buffer, output_buffer) = if plain {
            (MAX_HEAD_BYTES, 16 * 1024)
        } else {
            (32 * 1024, 16 * 1024)
        };
        let config = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .https_only(base.is_https() && !base.is_loopback())
            .user_agent(USER_AGENT)
            .proxy(proxy)
            .timeout_global(Some(deadline.cap(request_timeout)))
            // ureq zeroes 128 KiB per buffer per connection by default: most of a short hook's
            // user-space instructions. Server answers have small headers.
            .max_response_header_size(MAX_HEAD_BYTES)
            .input_buffer_size(input_buffer)
            .output_buffer_size(output_buffer)
            .build();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), LiteralFirst::default());
        Ok(Self {
            agent,
            base,
            authorization,
            request_timeout,
            deadline,
        })
    }

    /// The Server base URL.
    #[must_use]
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// The process deadline.
    #[must_use]
    pub fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// POSTs a JSON body and returns the reply.
    ///
    /// # Errors
    /// An [`HttpError`] when no usable reply arrived in time.
    pub fn post_json<B: Serialize>(&self, path: &str, body: &B) -> Result<Reply, HttpError> {
        self.send_json(false, path, body, None, JSON)
    }

    /// POSTs a JSON body accepting `accept` (an MCP endpoint wants `text/event-stream` too).
    ///
    /// # Errors
    /// An [`HttpError`] when no usable reply arrived in time.
    pub fn post_json_accepting<B: Serialize>(
        &self,
        path: &str,
        body: &B,
        accept: &str,
    ) -> Result<Reply, HttpError> {
        self.send_json(false, path, body, None, accept)
    }

    /// PUTs a JSON body and returns the reply.
    ///
    /// # Errors
    /// An [`HttpError`] when no usable reply arrived in time.
    pub fn put_json<B: Serialize>(&self, path: &str, body: &B) -> Result<Reply, HttpError> {
        self.send_json(true, path, body, None, JSON)
    }

    /// PUTs a JSON body, only if the resource still has entity tag `if_match`.
    ///
    /// # Errors
    /// An [`HttpError`] when no usable reply arrived in time.
    pub fn put_json_if_match<B: Serialize>(
        &self,
        path: &str,
        body: &B,
        if_match: &str,
    ) -> Result<Reply, HttpError> {
        self.send_json(true, path, body, Some(if_match), JSON)
    }

    fn send_json<B: Serialize>(
        &self,
        put: bool,
        path: &str,
        body: &B,
        if_match: Option<&str>,
        accept: &str,
    ) -> Result<Reply, HttpError> {
        let bytes = serde_json::to_vec(body).map_err(|_| HttpError::Unavailable)?;
        self.send_bytes(put, path, &bytes, if_match, accept)
    }

    /// [`Self::send_json`] of a body already serialized: the request itself is built by one
    /// function, not copied into each body type's instantiation.
    #[inline(never)]
    fn send_bytes(
        &self,
        put: bool,
        path: &str,
        bytes: &[u8],
        if_match: Option<&str>,
        accept: &str,
    ) -> Result<Reply, HttpError> {
        let timeout = self.deadline.cap(self.request_timeout);
        if timeout.is_zero() {
            return Err(HttpError::Timeout);
        }
        let url = self.base.join(path);
        let mut req = if put {
            self.agent.put(url)
        } else {
            self.agent.post(url)
        }
        .header("Accept", accept)
        .header("Content-Type", "application/json");
        if let Some(tag) = if_match {
            req = req.header("If-Match", tag);
        }
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a.header_value());
        }
        let result = req.config().timeout_global(Some(timeout)).build().send(bytes);
        read_reply(result)
    }

    /// GETs a path and returns the reply.
    ///
    /// # Errors
    /// An [`HttpError`] when no usable reply arrived in time.
    pub fn get(&self, path: &str) -> Result<Reply, HttpError> {
        let timeout = self.deadline.cap(self.request_timeout);
        if timeout.is_zero() {
            return Err(HttpError::Timeout);
        }
        let mut req = self
            .agent
            .get(self.base.join(path))
            .header("Accept", "application/json");
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a.header_value());
        }
        read_reply(req.config().timeout_global(Some(timeout)).build().call())
    }
}

/// Answers IP-literal hosts (`127.0.0.1`, `[::1]`) and `localhost` without a lookup; other names
/// go to ureq's resolver. ureq's resolver starts a lookup thread per connection even for a literal
/// address: most of a loopback hook's threads. `localhost` is always `127.0.0.1` then `::1`
/// (RFC 6761): plain `http://` is allowed to it as loopback, so a hosts file or DNS answer that
/// sends the name elsewhere must never carry the token off the machine in clear text. (This
/// uses ureq's unversioned API, hence the exact version pin.)
#[derive(Debug, Default)]
struct LiteralFirst(DefaultResolver);

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let Some(addrs) = literal_addrs(uri) else {
            return self.0.resolve(uri, config, timeout);
        };
        let mut out = self.empty();
        for a in addrs {
            out.push(a);
        }
        Ok(out)
    }
}

/// The addresses of an IP-literal or `localhost` URI, found without a lookup; `None` for a name.
fn literal_addrs(uri: &ureq::http::Uri) -> Option<Vec<std::net::SocketAddr>> {
    let authority = uri.authority()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    let port = authority.port_u16().or(match uri.scheme_str()? {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Some(vec![std::net::SocketAddr::new(ip, port)]);
    }
    host.eq_ignore_ascii_case("localhost").then(|| {
        vec![
            std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)),
            std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
        ]
    })
}

fn classify(err: &ureq::Error) -> HttpError {
    match err {
        ureq::Error::Timeout(_) => HttpError::Timeout,
        ureq::Error::Io(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            HttpError::Timeout
        }
        _ => HttpError::Unavailable,
    }
}

fn read_reply(result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Reply, HttpError> {
    let mut response = result.map_err(|e| classify(&e))?;
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        return Err(HttpError::Redirect(status));
    }
    let etag = response
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let declared = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(HttpError::BodyTooLarge(status));
    }
    let bytes = match response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_vec()
    {
        Ok(b) => b,
        Err(ureq::Error::BodyExceedsLimit(_)) => return Err(HttpError::BodyTooLarge(status)),
        Err(e) => return Err(classify(&e)),
    };
    match serde_json::from_slice::<Strict>(&bytes) {
        Ok(Strict(body)) => Ok(Reply {
            status,
            body,
            json: true,
            etag,
        }),
        Err(_) => Ok(Reply {
            status,
            body: Value::Null,
            json: false,
            etag,
        }),
    }
}

/// A JSON value in which no object names a key twice. serde_json keeps the last of repeated keys,
/// so `{"status":"empty",…,"status":"ready","content":…}` would pass an exact-keys check while
/// another reader of the same bytes sees a different answer: such a body is not JSON here.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON without repeated object keys")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom("repeated object key"));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Maps a non-success reply to a failure class (shared by every call).
#[must_use]
pub fn failure_for(reply: &Reply) -> Failure {
    let code = crate::wire::error_code(&reply.body);
    let outcome = match reply.status {
        401 => Outcome::AuthenticationFailed,
        403 => Outcome::Forbidden,
        404 if code == Some("scope_not_found") => Outcome::ScopeNotFound,
        // A route 404 has no application envelope: an old or foreign server.
        404 if code.is_none() => Outcome::VersionMismatch,
        503 if code == Some("inference_unavailable") => Outcome::InferenceUnavailable,
        503 => Outcome::ServerUnavailable,
        _ => Outcome::InvalidResponse,
    };
    Failure {
        outcome,
        http_status: Some(reply.status),
        detail: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_policy() {
        let env = Env::from_pairs([
            ("HTTPS_PROXY", "http://proxy.example:3128"),
            ("NO_PROXY", "internal.example"),
        ]);
        let remote = BaseUrl::parse("https://memory.example").unwrap();
        assert_eq!(
            proxy_for(&remote, &env).as_deref(),
            Some("http://proxy.example:3128")
        );
        assert_eq!(
            proxy_for(&BaseUrl::parse("http://127.0.0.1:8000").unwrap(), &env),
            None
        );
        assert_eq!(
            proxy_for(&BaseUrl::parse("https://localhost").unwrap(), &env),
            None
        );
        assert_eq!(
            proxy_for(&BaseUrl::parse("https://a.internal.example").unwrap(), &env),
            None
        );
        assert_eq!(proxy_for(&remote, &Env::default()), None);
        // An entry names its host in any case, with a port, a trailing dot or IPv6 brackets.
        for entry in [
            "Memory.Example",
            "memory.example:443",
            ".MEMORY.example.",
            "*.example",
            "other.example, memory.example",
        ] {
            let env = Env::from_pairs([("HTTPS_PROXY", "http://proxy.example:3128"), ("no_proxy", entry)]);
            assert_eq!(proxy_for(&remote, &env), None, "{entry}");
        }
        let v6 = BaseUrl::parse("https://[2001:db8::1]:8443").unwrap();
        for entry in ["[2001:db8::1]:8443", "2001:DB8::1"] {
            let env = Env::from_pairs([("HTTPS_PROXY", "http://proxy.example:3128"), ("NO_PROXY", entry)]);
            assert_eq!(proxy_for(&v6, &env), None, "{entry}");
        }
        let env = Env::from_pairs([
            ("HTTPS_PROXY", "http://proxy.example:3128"),
            ("NO_PROXY", "emory.example,memory.example.org"),
        ]);
        assert!(proxy_for(&remote, &env).is_some(), "only whole labels match");
    }

    #[test]
    fn a_proxy_this_build_cannot_use_is_refused_by_name() {
        let remote = BaseUrl::parse("https://192.0.2.1").unwrap();
        let open = |pairs: &[(&str, &str)]| {
            Transport::new(
                remote.clone(),
                None,
                Duration::from_secs(1),
                Deadline::after(Duration::from_secs(1)),
                &Env::from_pairs(pairs.iter().copied()),
            )
            .err()
        };
        // ureq without its SOCKS feature panics on a SOCKS proxy when it connects.
        for scheme in ["socks5", "socks5h", "socks4", "socks4a", "socks"] {
            let value = format!("{scheme}://127.0.0.1:1080");
            assert_eq!(open(&[("ALL_PROXY", &value)]), Some("ALL_PROXY"), "{scheme}");
            assert_eq!(open(&[("https_proxy", &value)]), Some("https_proxy"), "{scheme}");
        }
        assert_eq!(open(&[("all_proxy", "gopher://proxy")]), Some("all_proxy"));
        assert_eq!(open(&[("HTTPS_PROXY", "http://proxy.example:3128")]), None);
        assert_eq!(open(&[("HTTPS_PROXY", "https://proxy.example")]), None);
        assert_eq!(open(&[("HTTPS_PROXY", "proxy.example:3128")]), None);
        // Loopback and plain http never use a proxy, whatever it is.
        let local = Transport::new(
            BaseUrl::parse("http://127.0.0.1:8000").unwrap(),
            None,
            Duration::from_secs(1),
            Deadline::after(Duration::from_secs(1)),
            &Env::from_pairs([("ALL_PROXY", "socks5://127.0.0.1:1080")]),
        );
        assert!(local.is_ok());
    }

    #[test]
    fn literals_and_localhost_are_answered_without_a_lookup() {
        let addrs = |u: &str| literal_addrs(&u.parse().unwrap());
        let v4 = std::net::SocketAddr::from(([127, 0, 0, 1], 8000));
        let v6 = std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 8000));
        assert_eq!(addrs("http://127.0.0.1:8000/x"), Some(vec![v4]));
        assert_eq!(addrs("http://[::1]:8000"), Some(vec![v6]));
        // Whatever a hosts file or DNS says: plain http to it is allowed as loopback.
        assert_eq!(addrs("http://LocalHost:8000"), Some(vec![v4, v6]));
        assert_eq!(
            addrs("https://localhost").unwrap()[0],
            std::net::SocketAddr::from(([127, 0, 0, 1], 443))
        );
        assert_eq!(addrs("https://memory.example"), None);
        assert_eq!(addrs("http://localhost.evil.example:8000"), None);
    }

    #[test]
    fn a_body_that_repeats_a_key_is_not_json() {
        let strict = |text: &str| serde_json::from_str::<Strict>(text).ok().map(|s| s.0);
        let schema = "\"schema\":\"powercontext.prepared-context.v1\"";
        let twice = format!(
            "{{{schema},\"status\":\"empty\",\"content\":null,\"content_bytes\":0,\
             \"status\":\"ready\",\"content\":\"x\",\"content_bytes\":1}}"
        );
        assert_eq!(strict(&twice), None);
        assert_eq!(strict(r#"{"a":{"b":1,"b":2}}"#), None);
        assert_eq!(strict(r#"[{"a":1},{"a":1,"a":1}]"#), None);
        // Everything else reads exactly as serde_json reads it.
        for text in [
            r#"{"a":{"b":[1,-2,3.5,true,null,"s\u00e9"]},"c":{},"d":[]}"#,
            r#"{"scope_id":"scp_1","title":"t"}"#,
            "18446744073709551615",
            "\"x\"",
        ] {
            assert_eq!(
                strict(text),
                Some(serde_json::from_str::<Value>(text).unwrap()),
                "{text}"
            );
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(strict(&deep), None, "serde_json's depth limit still holds");
    }

    #[test]
    fn status_mapping() {
        let reply = |status, body: Value| Reply {
            status,
            body,
            json: true,
            etag: None,
        };
        let env404 =
            serde_json::json!({"error": {"code": "scope_not_found", "message": "", "details": null}});
        assert_eq!(
            failure_for(&reply(401, Value::Null)).outcome,
            Outcome::AuthenticationFailed
        );
        assert_eq!(failure_for(&reply(403, Value::Null)).outcome, Outcome::Forbidden);
        assert_eq!(failure_for(&reply(404, env404)).outcome, Outcome::ScopeNotFound);
        assert_eq!(
            failure_for(&reply(404, serde_json::json!({"detail": "Not Found"}))).outcome,
            Outcome::VersionMismatch
        );
        assert_eq!(
            failure_for(&reply(422, Value::Null)).outcome,
            Outcome::InvalidResponse
        );
        assert_eq!(
            failure_for(&reply(500, Value::Null)).outcome,
            Outcome::InvalidResponse
        );
        assert_eq!(
            failure_for(&reply(503, Value::Null)).outcome,
            Outcome::ServerUnavailable
        );
    }

    /// A loopback server answering one request with `head_pad` bytes of extra headers and a JSON
    /// body of `body_len` bytes; returns the transport's result.
    fn one_answer(head_pad: usize, body_len: usize, post: bool) -> Result<Reply, HttpError> {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse::<usize>().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            let payload = format!(
                "{{\"echo\":{},\"fill\":\"{}\"}}",
                body.len(),
                "x".repeat(body_len)
            );
            let pad = "a".repeat(head_pad);
            let mut conn = conn;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: {pad}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                payload.len()
            );
        });
        let transport = Transport::new(
            BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            None,
            Duration::from_secs(5),
            Deadline::after(Duration::from_secs(5)),
            &Env::default(),
        )
        .unwrap();
        let sent = "y".repeat(if post { 40_000 } else { 0 });
        let result = if post {
            transport.post_json("/v1/echo", &serde_json::json!({ "text": sent }))
        } else {
            transport.get("/v1/echo")
        };
        let _ = server.join();
        result
    }

    #[test]
    fn plain_http_buffers_carry_large_heads_requests_and_bodies() {
        // A head close to the cap, a request body five times the output buffer and an answer
        // many times the input buffer all pass through whole.
        let reply = one_answer(15 * 1024, 300_000, true).unwrap();
        assert_eq!(reply.status, 200);
        assert!(reply.json);
        assert_eq!(reply.body["echo"], 40_000 + 11);
        assert_eq!(reply.body["fill"].as_str().map(str::len), Some(300_000));
        // A head over the cap is refused, not read without bound.
        assert!(one_answer(20 * 1024, 10, false).is_err());
    }

    #[test]
    fn a_token_config_accepts_is_sent_whole_over_plain_http() {
        use std::io::{BufRead, BufReader, Write};
        // 8192 characters: the longest token `Authorization` accepts.
        let token = "t".repeat(8192);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let Ok((conn, _)) = listener.accept() else {
                return 0;
            };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut seen = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return seen;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("authorization: bearer ") {
                    seen = v.trim().len();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut conn = conn;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            );
            seen
        });
        let transport = Transport::new(
            BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            Some(Authorization::parse_token(&token).unwrap()),
            Duration::from_secs(5),
            Deadline::after(Duration::from_secs(5)),
            &Env::default(),
        )
        .unwrap();
        let result = transport.get("/v1/echo");
        drop(transport);
        // Unblocks the accept when the request never connected.
        let _ = std::net::TcpStream::connect(("127.0.0.1", port));
        assert_eq!(result.map(|r| r.status), Ok(200));
        assert_eq!(server.join().unwrap(), 8192);
    }
}

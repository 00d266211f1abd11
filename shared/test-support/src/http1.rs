//! Tiny HTTP/1.1 server core for loopback test servers: accepts on 127.0.0.1, parses and records
//! requests, and runs one handler thread per connection. It never binds a non-loopback address,
//! never keeps a connection alive past one response, and never outlives its owner: dropping the
//! server stops accepting, wakes every parked or blocked connection and joins all its threads.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often blocked reads, writes and parked connections look at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// Request heads larger than this are rejected (real hosts send a few KiB at most).
const MAX_HEAD: usize = 64 * 1024;
/// Request bodies larger than this are rejected so a broken client cannot exhaust memory.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// `peek_request` never looks at more than this many buffered bytes.
const MAX_PEEK: usize = 4 * 1024 * 1024;

/// One request as the server received it. `path` is the request target exactly as sent,
/// query string included (Claude Code sends `/v1/messages?beta=true`).
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// First header with this name, compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, or `None` when it is empty or not JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body as text; invalid UTF-8 is replaced rather than failing a test on the spot.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The request target without its query string.
    pub fn path_only(&self) -> &str {
        self.path.split_once('?').map_or(self.path.as_str(), |(p, _)| p)
    }

    /// The query string (after `?`), if any.
    pub fn query(&self) -> Option<&str> {
        self.path.split_once('?').map(|(_, q)| q)
    }
}

/// Result of [`Connection::peek_request`].
#[derive(Debug)]
pub enum Peeked {
    /// A whole request is waiting in the socket buffer, still unread; `len` bytes long.
    Complete { request: RecordedRequest, len: usize },
    /// Bytes stopped arriving before a whole request could be peeked (e.g. the body exceeds the
    /// socket buffer). `partial` holds the request with the body received so far once the head
    /// is complete; it is not recorded. Read the request normally to go on.
    Stalled { partial: Option<RecordedRequest> },
    /// The client closed without sending a request.
    Closed,
}

struct Shared {
    stop: AtomicBool,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Live connections: a weak handle (so a finished connection closes at once) and its thread.
    conns: Mutex<Vec<(Weak<TcpStream>, JoinHandle<()>)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking handler must not hide the requests recorded so far.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stopped() -> io::Error {
    io::Error::other("test server stopped")
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A loopback HTTP/1.1 server; each accepted connection is handed to the handler on its own thread.
pub struct Http1Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Http1Server {
    /// Binds `127.0.0.1:0` and starts accepting. The handler owns the connection: it usually calls
    /// [`Connection::read_request`] and then writes one response.
    pub fn start<H>(handler: H) -> io::Result<Http1Server>
    where
        H: Fn(Connection) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
        });
        let handler = Arc::new(handler);
        let accept_shared = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name("test-http1-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared, &handler))?;
        Ok(Http1Server {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Waits until at least `n` requests were recorded; false when `timeout` passes first.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.request_count() >= n {
                return true;
            }
            if start.elapsed() >= timeout {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Http1Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // `accept` blocks; a connection to ourselves wakes it so it can see the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let conns = std::mem::take(&mut *lock(&self.shared.conns));
        for (stream, _) in &conns {
            // Shutting the socket down unblocks any read or write a handler is stuck in.
            if let Some(stream) = stream.upgrade() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        for (_, handle) in conns {
            let _ = handle.join();
        }
    }
}

fn accept_loop<H>(listener: &TcpListener, shared: &Arc<Shared>, handler: &Arc<H>)
where
    H: Fn(Connection) + Send + Sync + 'static,
{
    for incoming in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = incoming else {
            // Transient accept errors (e.g. a client that reset early) must not end the server.
            thread::sleep(Duration::from_millis(5));
            continue;
        };
        let _ = stream.set_nodelay(true);
        // Timeouts turn blocking calls into polls of the stop flag.
        let _ = stream.set_read_timeout(Some(POLL));
        let _ = stream.set_write_timeout(Some(POLL));
        let stream = Arc::new(stream);
        let weak = Arc::downgrade(&stream);
        let conn = Connection {
            stream,
            shared: Arc::clone(shared),
            sent_continue: false,
        };
        let handler = Arc::clone(handler);
        let spawned = thread::Builder::new()
            .name("test-http1-conn".into())
            .spawn(move || handler(conn));
        if let Ok(handle) = spawned {
            let mut conns = lock(&shared.conns);
            conns.retain(|(_, h)| !h.is_finished());
            conns.push((weak, handle));
        }
    }
}

/// One accepted connection. Dropping it closes the socket.
pub struct Connection {
    stream: Arc<TcpStream>,
    shared: Arc<Shared>,
    sent_continue: bool,
}

impl Connection {
    /// True once the owning server is being dropped; long-running handlers must return then.
    pub fn is_stopping(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// The underlying socket (already set to short read/write timeouts).
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Reads (consumes) one request and records it. `Ok(None)` when the client closed before
    /// sending anything.
    pub fn read_request(&mut self) -> io::Result<Option<RecordedRequest>> {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match parse(&buf) {
                Parse::Complete { request, .. } => {
                    self.record(&request);
                    return Ok(Some(request));
                }
                Parse::Invalid(why) => return Err(io::Error::new(io::ErrorKind::InvalidData, why)),
                Parse::Incomplete { expect_continue } => self.maybe_continue(expect_continue)?,
            }
            match (&*self.stream).read(&mut chunk) {
                Ok(0) if buf.is_empty() => return Ok(None),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if is_timeout(&e) => {
                    if self.is_stopping() {
                        return Err(stopped());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits for a whole request without consuming it (`MSG_PEEK`), so a handler can decide to
    /// leave it unread, as a server that never reads would. Records the request when complete.
    /// Returns `Stalled` when bytes stop arriving for `stall` before a request is complete.
    pub fn peek_request(&mut self, stall: Duration) -> io::Result<Peeked> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut seen = 0usize;
        let mut last_change = Instant::now();
        loop {
            if self.is_stopping() {
                return Err(stopped());
            }
            match self.stream.peek(&mut buf) {
                Ok(0) => return Ok(Peeked::Closed),
                Ok(n) => {
                    match parse(&buf[..n]) {
                        Parse::Complete { request, len } => {
                            self.record(&request);
                            return Ok(Peeked::Complete { request, len });
                        }
                        Parse::Invalid(why) => {
                            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
                        }
                        Parse::Incomplete { expect_continue } => self.maybe_continue(expect_continue)?,
                    }
                    if n == buf.len() && buf.len() < MAX_PEEK {
                        buf.resize(buf.len() * 2, 0);
                        continue;
                    }
                    if n != seen {
                        seen = n;
                        last_change = Instant::now();
                    } else if last_change.elapsed() >= stall {
                        return Ok(Peeked::Stalled {
                            partial: parse_partial(&buf[..n]),
                        });
                    }
                    // Peek returns at once while data is buffered; don't spin on it.
                    thread::sleep(Duration::from_millis(2));
                }
                // Nothing buffered yet (buffered data makes peek return at once): keep waiting.
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Consumes `len` bytes that `peek_request` reported.
    pub fn consume(&mut self, len: usize) -> io::Result<()> {
        let mut left = len;
        let mut chunk = vec![0u8; 16 * 1024];
        while left > 0 {
            let want = left.min(chunk.len());
            match (&*self.stream).read(&mut chunk[..want]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => left -= n,
                Err(e) if is_timeout(&e) => {
                    if self.is_stopping() {
                        return Err(stopped());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Adds a request to the server's log (done by `read_request`/`peek_request` already).
    pub fn record(&self, request: &RecordedRequest) {
        lock(&self.shared.requests).push(request.clone());
    }

    /// Blocks until the server is dropped.
    pub fn park(&self) {
        while !self.is_stopping() {
            thread::sleep(POLL);
        }
    }

    /// Sleeps for `d` unless the server stops first; returns false when it stopped.
    pub fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.is_stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            thread::sleep((end - now).min(POLL));
        }
    }

    /// Writes everything, waiting out a slow reader but giving up once the server stops.
    pub fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match (&*self.stream).write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if is_timeout(&e) => {
                    if self.is_stopping() {
                        return Err(stopped());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes a status line and the given headers, exactly as given (no length is added).
    pub fn write_head(&mut self, status: u16, headers: &[(String, String)]) -> io::Result<()> {
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        self.write_all(head.as_bytes())
    }

    /// Writes a complete response: adds `content-length` and `connection: close` unless the
    /// caller supplied them (or `transfer-encoding`), then the body.
    pub fn respond(&mut self, status: u16, headers: &[(String, String)], body: &[u8]) -> io::Result<()> {
        let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut all = headers.to_vec();
        if !has("content-length") && !has("transfer-encoding") {
            all.push(("content-length".into(), body.len().to_string()));
        }
        if !has("connection") {
            all.push(("connection".into(), "close".into()));
        }
        self.write_head(status, &all)?;
        self.write_all(body)?;
        (&*self.stream).flush()
    }

    /// Sends FIN after the response so close-delimited bodies end cleanly, then drops the socket.
    pub fn close(self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    fn maybe_continue(&mut self, expect_continue: bool) -> io::Result<()> {
        if expect_continue && !self.sent_continue {
            self.sent_continue = true;
            self.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        Ok(())
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

enum Parse {
    Complete { request: RecordedRequest, len: usize },
    Incomplete { expect_continue: bool },
    Invalid(&'static str),
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parses the request head at the start of `buf`: `Ok(None)` while incomplete, otherwise the
/// request (empty body) and the head's length including the blank line.
fn parse_head(buf: &[u8]) -> Result<Option<(RecordedRequest, usize)>, &'static str> {
    let Some(head_end) = find(buf, b"\r\n\r\n") else {
        return if buf.len() > MAX_HEAD {
            Err("request head too large")
        } else {
            Ok(None)
        };
    };
    if head_end > MAX_HEAD {
        return Err("request head too large");
    }
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("malformed request line");
    };
    if method.is_empty() || path.is_empty() || !version.starts_with("HTTP/1.") {
        return Err("malformed request line");
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            return Err("malformed header line");
        };
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let request = RecordedRequest {
        method: method.to_string(),
        path: path.to_string(),
        headers,
        body: Vec::new(),
    };
    Ok(Some((request, head_end + 4)))
}

fn is_chunked(request: &RecordedRequest) -> bool {
    request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
}

/// Parses one request from the start of `buf`; the whole buffer is re-parsed on every call,
/// which is fine for test-sized requests and keeps the state machine trivial.
fn parse(buf: &[u8]) -> Parse {
    let (mut request, head_len) = match parse_head(buf) {
        Err(why) => return Parse::Invalid(why),
        Ok(None) => {
            return Parse::Incomplete {
                expect_continue: false,
            };
        }
        Ok(Some(head)) => head,
    };
    let expect_continue = request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    let rest = &buf[head_len..];
    let body_len = if is_chunked(&request) {
        match decode_chunked(rest) {
            Err(why) => return Parse::Invalid(why),
            Ok(None) => return Parse::Incomplete { expect_continue },
            Ok(Some((body, used))) => {
                request.body = body;
                used
            }
        }
    } else if let Some(cl) = request.header("content-length") {
        let Ok(cl) = cl.parse::<usize>() else {
            return Parse::Invalid("bad content-length");
        };
        if cl > MAX_BODY {
            return Parse::Invalid("request body too large");
        }
        if rest.len() < cl {
            return Parse::Incomplete { expect_continue };
        }
        request.body = rest[..cl].to_vec();
        cl
    } else {
        0
    };
    Parse::Complete {
        request,
        len: head_len + body_len,
    }
}

/// The request in `buf` with whatever body bytes arrived so far (raw, even if chunked), or
/// `None` while the head is incomplete or invalid.
fn parse_partial(buf: &[u8]) -> Option<RecordedRequest> {
    let (mut request, head_len) = parse_head(buf).ok()??;
    let rest = &buf[head_len..];
    let declared = request
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(rest.len());
    request.body = rest[..declared.min(rest.len())].to_vec();
    Some(request)
}

/// Decodes a chunked body from the start of `buf`: `Ok(None)` while incomplete, otherwise the
/// body and how many bytes it used (trailers included).
fn decode_chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, &'static str> {
    let mut pos = 0;
    let mut body = Vec::new();
    loop {
        let Some(eol) = find(&buf[pos..], b"\r\n") else {
            return if buf.len() - pos > 1024 {
                Err("chunk size line too long")
            } else {
                Ok(None)
            };
        };
        let line = String::from_utf8_lossy(&buf[pos..pos + eol]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        pos += eol + 2;
        if size == 0 {
            // Trailer lines end with an empty line.
            loop {
                let Some(eol) = find(&buf[pos..], b"\r\n") else {
                    return Ok(None);
                };
                pos += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, pos)));
                }
            }
        }
        if size > MAX_BODY || body.len() + size > MAX_BODY {
            return Err("request body too large");
        }
        if buf.len() < pos + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        if &buf[pos + size..pos + size + 2] != b"\r\n" {
            return Err("chunk not followed by CRLF");
        }
        pos += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    fn echo_server() -> Http1Server {
        Http1Server::start(|mut conn| {
            if let Ok(Some(req)) = conn.read_request() {
                let body = format!("{} {} {}", req.method, req.path, req.body_text());
                let _ = conn.respond(200, &[], body.as_bytes());
                conn.close();
            }
        })
        .expect("start server")
    }

    fn raw_exchange(server: &Http1Server, request: &[u8]) -> String {
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(request).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read to EOF");
        out
    }

    #[test]
    fn parses_content_length_body_and_headers_case_insensitively() {
        let server = echo_server();
        let out = raw_exchange(
            &server,
            b"POST /v1/x?beta=true HTTP/1.1\r\nHost: a\r\nX-Api-Key: k1\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
        );
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.ends_with("POST /v1/x?beta=true {\"a\":1}"), "{out}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].header("x-api-key"), Some("k1"));
        assert_eq!(reqs[0].header("CONTENT-LENGTH"), Some("7"));
        assert_eq!(reqs[0].header("missing"), None);
        assert_eq!(reqs[0].path_only(), "/v1/x");
        assert_eq!(reqs[0].query(), Some("beta=true"));
        assert_eq!(reqs[0].json(), Some(serde_json::json!({"a": 1})));
    }

    #[test]
    fn decodes_chunked_request_bodies_with_extensions_and_trailers() {
        let server = echo_server();
        let out = raw_exchange(
            &server,
            b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n",
        );
        assert!(out.ends_with("POST /c abcdefg"), "{out}");
        assert_eq!(server.requests()[0].body, b"abcdefg");
    }

    #[test]
    fn answers_expect_continue_before_the_body_arrives() {
        let server = echo_server();
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(b"POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            .expect("write head");
        let mut reader = BufReader::new(s.try_clone().expect("clone"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("read interim");
        assert_eq!(line, "HTTP/1.1 100 Continue\r\n");
        s.write_all(b"hi").expect("write body");
        let mut rest = String::new();
        reader.read_to_string(&mut rest).expect("read rest");
        assert!(rest.ends_with("POST /e hi"), "{rest}");
    }

    #[test]
    fn malformed_request_is_not_recorded() {
        let server = echo_server();
        let out = raw_exchange(&server, b"garbage\r\n\r\n");
        assert_eq!(out, "");
        assert_eq!(server.request_count(), 0);
    }

    #[test]
    fn drop_ends_a_parked_connection_and_joins_its_thread() {
        let server = Http1Server::start(|mut conn| {
            let _ = conn.read_request();
            conn.park();
        })
        .expect("start server");
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
        assert!(server.wait_for_requests(1, Duration::from_secs(5)));
        let started = Instant::now();
        drop(server);
        assert!(started.elapsed() < Duration::from_secs(2));
        s.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let mut buf = [0u8; 16];
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "connection must be closed after drop");
    }

    #[test]
    fn drop_unblocks_a_connection_that_never_sends() {
        let server = Http1Server::start(|mut conn| {
            let _ = conn.read_request();
        })
        .expect("start server");
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        thread::sleep(Duration::from_millis(50));
        drop(server);
        s.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
    }
}

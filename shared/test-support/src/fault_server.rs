//! Loopback fault-injection server: answers each request with whatever [`Reply`] the test's handler
//! picks (errors, redirects, hangs, drips, oversized bodies, abrupt closes) and records every
//! request. It only binds 127.0.0.1 and must never outlive the test that owns it.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use crate::http1::{Connection, Http1Server, Peeked, RecordedRequest};

/// How long `peek_request` waits for more bytes before it gives up keeping the request unread.
const PEEK_STALL: Duration = Duration::from_millis(200);

/// What the fault server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A normal response; `content-length` and `connection: close` are added unless given.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// A redirect with an empty body.
    Redirect { status: u16, location: String },
    /// Reads the request, then never answers (until the server is dropped).
    Hang,
    /// Never reads the request (it stays in the socket buffer, so a large upload blocks) and never
    /// answers. The handler still sees the request: the server peeks at it without consuming it.
    HangBeforeRead,
    /// Sends the head at once, then `body` in `chunk`-byte pieces, sleeping `interval` before
    /// each piece. Without `declared_length` the body is delimited by closing the connection.
    SlowBody {
        status: u16,
        body: Vec<u8>,
        declared_length: bool,
        chunk: usize,
        interval: Duration,
    },
    /// Streams a `size`-byte JSON body (`{"filler":"xxx…"}`, valid JSON when read to the end) as
    /// fast as the client reads. Without `declared_length` it is delimited by closing.
    Oversized {
        status: u16,
        size: usize,
        declared_length: bool,
    },
    /// Reads the request, then closes the connection without answering.
    Close,
}

impl Reply {
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    pub fn text(status: u16, text: &str) -> Reply {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: text.as_bytes().to_vec(),
        }
    }

    /// A body-less response with just a status.
    pub fn empty(status: u16) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The same reply with one more header (only meaningful for `Status`; others are unchanged).
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }
}

/// A loopback server whose answers come from a test-supplied handler. Dropping it ends every
/// connection, including hung ones.
pub struct FaultServer {
    server: Http1Server,
}

impl FaultServer {
    /// Starts the server; panics if loopback cannot be bound (a broken test machine). The handler
    /// runs once per request, on that connection's thread. A request too large to wait unread in
    /// the socket buffer (several MiB) is shown to the handler with the body received so far;
    /// `requests()` still records it whole unless the reply was `HangBeforeRead`.
    pub fn start(handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> FaultServer {
        let handler = Arc::new(handler);
        let server = Http1Server::start(move |conn| serve(conn, handler.as_ref()))
            .expect("fault server: bind 127.0.0.1:0");
        FaultServer { server }
    }

    /// A server that gives every request the same reply.
    pub fn always(reply: Reply) -> FaultServer {
        FaultServer::start(move |_| reply.clone())
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// Every request seen so far, in arrival order (including ones answered with `HangBeforeRead`).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    pub fn request_count(&self) -> usize {
        self.server.request_count()
    }

    /// Waits until at least `n` requests arrived; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.server.wait_for_requests(n, timeout)
    }

    /// The path (without query) of every request so far, in arrival order.
    pub fn paths(&self) -> Vec<String> {
        self.requests().iter().map(|r| r.path_only().to_owned()).collect()
    }

    /// How many requests went to `path` (without query).
    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path_only() == path).count()
    }

    /// The JSON body of every request to `path` (without query), in order; panics on one that
    /// is not JSON.
    pub fn bodies(&self, path: &str) -> Vec<serde_json::Value> {
        self.requests()
            .iter()
            .filter(|r| r.path_only() == path)
            .map(|r| r.json().expect("JSON body"))
            .collect()
    }

    /// The JSON body of the last request to `path`, if any.
    pub fn last_json(&self, path: &str) -> Option<serde_json::Value> {
        self.bodies(path).pop()
    }
}

/// A URL on which nothing listens, so connecting is refused. The port was just free; another
/// process could take it in between, which is unlikely enough for tests.
pub fn closed_port_url() -> String {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    format!("http://{addr}")
}

fn serve<H>(mut conn: Connection, handler: &H)
where
    H: Fn(&RecordedRequest) -> Reply + ?Sized,
{
    // Peek first so `HangBeforeRead` can leave the request unread; everything else consumes it.
    let reply = match conn.peek_request(PEEK_STALL) {
        Ok(Peeked::Complete { request, len }) => {
            let reply = handler(&request);
            if matches!(reply, Reply::HangBeforeRead) {
                conn.park();
                return;
            }
            if conn.consume(len).is_err() {
                return;
            }
            reply
        }
        // Too big to peek whole: decide on the head and the body so far, so that a large
        // upload still meets a server that never reads.
        Ok(Peeked::Stalled {
            partial: Some(partial),
        }) => {
            let reply = handler(&partial);
            if matches!(reply, Reply::HangBeforeRead) {
                conn.record(&partial);
                conn.park();
                return;
            }
            if !matches!(conn.read_request(), Ok(Some(_))) {
                return;
            }
            reply
        }
        Ok(Peeked::Stalled { partial: None }) => match conn.read_request() {
            Ok(Some(request)) => handler(&request),
            _ => return,
        },
        Ok(Peeked::Closed) | Err(_) => return,
    };
    // Write errors mean the client went away or the server stops; either way we are done.
    let _ = answer(&mut conn, reply);
    conn.close();
}

fn answer(conn: &mut Connection, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => conn.respond(status, &headers, &body),
        Reply::Redirect { status, location } => conn.respond(status, &[("location".into(), location)], b""),
        Reply::Hang | Reply::HangBeforeRead => {
            conn.park();
            Ok(())
        }
        Reply::Close => Ok(()),
        Reply::SlowBody {
            status,
            body,
            declared_length,
            chunk,
            interval,
        } => {
            conn.write_head(
                status,
                &body_headers("application/octet-stream", body.len(), declared_length),
            )?;
            for piece in body.chunks(chunk.max(1)) {
                if !conn.sleep(interval) {
                    return Ok(());
                }
                conn.write_all(piece)?;
            }
            Ok(())
        }
        Reply::Oversized {
            status,
            size,
            declared_length,
        } => {
            conn.write_head(status, &body_headers("application/json", size, declared_length))?;
            let (prefix, suffix): (&[u8], &[u8]) = if size >= 14 {
                (b"{\"filler\":\"", b"\"}")
            } else {
                (b"", b"")
            };
            conn.write_all(prefix)?;
            let mut left = size - prefix.len() - suffix.len();
            let block = vec![b'x'; 64 * 1024];
            while left > 0 {
                let n = left.min(block.len());
                conn.write_all(&block[..n])?;
                left -= n;
            }
            conn.write_all(suffix)
        }
    }
}

fn body_headers(content_type: &str, len: usize, declared_length: bool) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_string(), content_type.to_string()),
        ("connection".to_string(), "close".to_string()),
    ];
    if declared_length {
        headers.push(("content-length".to_string(), len.to_string()));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into()
    }

    fn connect(server: &FaultServer) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s
    }

    /// Reads until EOF or an error (a timeout included); returns what arrived and how it ended.
    fn read_all(s: &mut TcpStream) -> (Vec<u8>, Result<(), ErrorKind>) {
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return (out, Ok(())),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Err(e.kind())),
            }
        }
    }

    fn is_timeout(kind: ErrorKind) -> bool {
        matches!(kind, ErrorKind::WouldBlock | ErrorKind::TimedOut)
    }

    #[test]
    fn status_reply_carries_status_headers_body_and_records_the_request() {
        let server = FaultServer::start(|req| {
            if req.path == "/v1/fail" {
                Reply::json(503, &serde_json::json!({"error": "busy"})).with_header("retry-after", "1")
            } else {
                Reply::text(200, "fine")
            }
        });
        let mut resp = agent()
            .post(format!("{}/v1/fail", server.url()))
            .header("Authorization", "Bearer t0k")
            .send_json(serde_json::json!({"prompt": "hi"}))
            .expect("response");
        assert_eq!(resp.status(), 503);
        assert_eq!(
            resp.headers().get("retry-after").and_then(|v| v.to_str().ok()),
            Some("1")
        );
        let body: serde_json::Value = resp.body_mut().read_json().expect("json body");
        assert_eq!(body, serde_json::json!({"error": "busy"}));
        let mut ok = agent()
            .get(format!("{}/other", server.url()))
            .call()
            .expect("response");
        assert_eq!(ok.status(), 200);
        assert_eq!(ok.body_mut().read_to_string().expect("text"), "fine");

        let reqs = server.requests();
        assert_eq!(server.request_count(), 2);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].header("authorization"), Some("Bearer t0k"));
        assert_eq!(reqs[0].json(), Some(serde_json::json!({"prompt": "hi"})));
        assert_eq!(reqs[1].method, "GET");
    }

    #[test]
    fn handler_can_vary_replies_per_request() {
        let calls = AtomicUsize::new(0);
        let server = FaultServer::start(move |_| {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Reply::empty(500)
            } else {
                Reply::empty(204)
            }
        });
        let a = agent();
        assert_eq!(a.get(server.url()).call().expect("first").status(), 500);
        assert_eq!(a.get(server.url()).call().expect("second").status(), 204);
    }

    #[test]
    fn redirect_is_not_followed_with_max_redirects_zero() {
        let server = FaultServer::always(Reply::Redirect {
            status: 302,
            location: "http://127.0.0.1:9/elsewhere".into(),
        });
        let resp = agent().get(server.url()).call().expect("response");
        assert_eq!(resp.status(), 302);
        assert_eq!(
            resp.headers().get("location").and_then(|v| v.to_str().ok()),
            Some("http://127.0.0.1:9/elsewhere")
        );
        assert_eq!(server.request_count(), 1);
    }

    #[test]
    fn hang_never_answers_and_drop_ends_the_connection() {
        let server = FaultServer::always(Reply::Hang);
        let mut s = connect(&server);
        s.write_all(b"POST /h HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
            .expect("write");
        assert!(server.wait_for_requests(1, Duration::from_secs(5)));
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 64];
        let err = s.read(&mut buf).expect_err("no answer within 300 ms");
        assert!(is_timeout(err.kind()), "{err:?}");
        assert_eq!(server.requests()[0].body, b"hi");

        drop(server);
        s.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let (data, end) = read_all(&mut s);
        assert!(data.is_empty());
        assert_eq!(end, Ok(()), "connection must end with EOF after drop");
    }

    #[test]
    fn hang_times_out_a_ureq_client() {
        let server = FaultServer::always(Reply::Hang);
        let a: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(300)))
            .build()
            .into();
        let started = Instant::now();
        let result = a.get(server.url()).call();
        assert!(matches!(result, Err(ureq::Error::Timeout(_))), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn hang_before_read_leaves_the_request_unread_but_visible() {
        let server = FaultServer::always(Reply::HangBeforeRead);
        let mut s = connect(&server);
        s.write_all(b"GET /unread HTTP/1.1\r\n\r\n").expect("write");
        assert!(server.wait_for_requests(1, Duration::from_secs(5)));
        assert_eq!(server.requests()[0].path, "/unread");
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 64];
        let err = s.read(&mut buf).expect_err("no answer within 300 ms");
        assert!(is_timeout(err.kind()), "{err:?}");
        drop(server);
        s.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        // Closing with unread data sends a reset, so EOF or a reset is fine; a timeout is not.
        let (data, end) = read_all(&mut s);
        assert!(data.is_empty());
        assert!(!end.is_err_and(is_timeout), "{end:?}");
    }

    #[test]
    fn hang_before_read_blocks_a_large_upload() {
        let server = FaultServer::always(Reply::HangBeforeRead);
        let mut s = connect(&server);
        s.set_write_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let body = vec![b'a'; 64 * 1024 * 1024];
        let head = format!("POST /big HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
        s.write_all(head.as_bytes()).expect("head");
        // Nobody reads, so the kernel buffers fill and the write times out.
        assert!(s.write_all(&body).is_err());
        assert!(server.wait_for_requests(1, Duration::from_secs(5)));
        let seen = &server.requests()[0];
        assert_eq!(seen.path, "/big");
        assert!(seen.body.len() < body.len());
    }

    #[test]
    fn a_body_too_large_to_peek_is_still_answered_and_recorded_whole() {
        let server = FaultServer::start(|req| Reply::text(200, &req.path));
        let body = vec![b'b'; 12 * 1024 * 1024];
        let mut resp = agent()
            .post(format!("{}/large", server.url()))
            .send(&body[..])
            .expect("response");
        assert_eq!(resp.body_mut().read_to_string().expect("body"), "/large");
        assert_eq!(server.requests()[0].body.len(), body.len());
    }

    #[test]
    fn slow_body_drips_in_chunks_with_and_without_length() {
        for declared_length in [true, false] {
            let server = FaultServer::always(Reply::SlowBody {
                status: 200,
                body: b"abcdef".to_vec(),
                declared_length,
                chunk: 2,
                interval: Duration::from_millis(100),
            });
            let started = Instant::now();
            let mut resp = agent().get(server.url()).call().expect("response");
            let text = resp.body_mut().read_to_string().expect("body");
            assert_eq!(text, "abcdef");
            assert!(
                started.elapsed() >= Duration::from_millis(300),
                "{declared_length}"
            );
            let has_len = resp.headers().get("content-length").is_some();
            assert_eq!(has_len, declared_length);
        }
    }

    #[test]
    fn slow_body_times_out_a_client_with_a_short_deadline() {
        let server = FaultServer::always(Reply::SlowBody {
            status: 200,
            body: vec![b'z'; 100],
            declared_length: true,
            chunk: 1,
            interval: Duration::from_millis(50),
        });
        let a: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(300)))
            .build()
            .into();
        let result = a
            .get(server.url())
            .call()
            .and_then(|mut r| r.body_mut().read_to_string());
        assert!(result.is_err(), "{result:?}");
    }

    #[test]
    fn oversized_streams_exactly_size_bytes_of_json() {
        for declared_length in [true, false] {
            let size = 3 * 1024 * 1024 + 7;
            let server = FaultServer::always(Reply::Oversized {
                status: 200,
                size,
                declared_length,
            });
            let mut resp = agent().get(server.url()).call().expect("response");
            let body = resp
                .body_mut()
                .with_config()
                .limit(16 * 1024 * 1024)
                .read_to_vec()
                .expect("body");
            assert_eq!(body.len(), size);
            assert!(body.starts_with(b"{\"filler\":\"xxx"));
            let v: serde_json::Value = serde_json::from_slice(&body).expect("valid json");
            assert!(v["filler"].is_string());
        }
    }

    #[test]
    fn oversized_is_refused_by_a_capped_client_and_the_server_survives() {
        let server = FaultServer::always(Reply::Oversized {
            status: 200,
            size: 8 * 1024 * 1024,
            declared_length: false,
        });
        let mut resp = agent().get(server.url()).call().expect("response");
        let result = resp.body_mut().with_config().limit(1024 * 1024).read_to_vec();
        assert!(result.is_err());
        drop(resp);
        // The server thread notices the closed connection; a new request still works.
        assert_eq!(agent().get(server.url()).call().expect("again").status(), 200);
    }

    #[test]
    fn close_ends_the_connection_without_a_response() {
        let server = FaultServer::always(Reply::Close);
        let mut s = connect(&server);
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
        let (data, end) = read_all(&mut s);
        assert!(data.is_empty());
        assert_eq!(end, Ok(()));
        assert!(agent().get(server.url()).call().is_err());
        assert_eq!(server.request_count(), 2);
    }

    #[test]
    fn closed_port_url_refuses_connections() {
        let url = closed_port_url();
        assert!(url.starts_with("http://127.0.0.1:"));
        let addr = url.trim_start_matches("http://");
        let err = TcpStream::connect(addr).expect_err("refused");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}

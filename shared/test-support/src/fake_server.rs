//! The fake PowerContext Server the loopback tests talk to, built on the fault server: the
//! PreparedContext answers, a router with the Server's routes (each answer replaceable), and a
//! proxy that puts the real Server behind a switch. Only for behaviour the real Server cannot be
//! made to show on demand; everything else runs against the real one.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::endpoint::BaseUrl;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::http::Transport;
use serde_json::{Value, json};

use crate::fault_server::{FaultServer, Reply};
use crate::http1::RecordedRequest;

pub const RESOLVE: &str = "/v1/scope-bindings/resolve";
pub const PREPARE: &str = "/v1/context/prepare";
pub const CAPTURE: &str = "/v1/sources/content";
pub const FLUSH: &str = "/v1/memory/flush";
pub const BOOTSTRAP: &str = "/v1/context/bootstrap";

/// A valid PreparedContext v1 answer with `content`.
pub fn ready(content: &str) -> Value {
    json!({"schema": "powercontext.prepared-context.v1", "status": "ready", "content": content,
           "content_bytes": content.len()})
}

/// A valid PreparedContext v1 answer with nothing to inject.
pub fn empty() -> Value {
    json!({"schema": "powercontext.prepared-context.v1", "status": "empty", "content": null,
           "content_bytes": 0})
}

/// The 202 a capture gets, at journal `position`.
pub fn accepted(position: u64) -> Value {
    json!({"status": "accepted", "source": {"name": "content", "source_id": "x"},
           "position": position})
}

/// A flush that processed up to `cursor`.
pub fn flushed(cursor: u64) -> Reply {
    Reply::json(200, &json!({"status": "processed", "current_cursor": cursor}))
}

/// The Server's error envelope.
pub fn envelope(status: u16, code: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"code": code, "message": "m", "details": null}}),
    )
}

type Handler = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// Configures a [`FakeServer`]: by default the scope resolves to the builder's scope, a capture
/// is accepted at position 7 and every other route answers 404.
pub struct FakeServerBuilder {
    routes: BTreeMap<String, Handler>,
    fallback: Handler,
}

impl FakeServerBuilder {
    /// `path` (without its query) answers with `handler`, replacing any earlier answer.
    pub fn route(
        mut self,
        path: &str,
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.routes.insert(path.to_owned(), Arc::new(handler));
        self
    }

    /// `path` always answers `reply`.
    pub fn answer(self, path: &str, reply: Reply) -> Self {
        self.route(path, move |_| reply.clone())
    }

    /// `path` no longer has a route of its own (it gets the fallback).
    pub fn without(mut self, path: &str) -> Self {
        self.routes.remove(path);
        self
    }

    /// What a request to a path without a route gets (404 by default).
    pub fn fallback(mut self, handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> Self {
        self.fallback = Arc::new(handler);
        self
    }

    /// Prepare answers whatever `prepare` returns.
    pub fn prepare(self, prepare: impl Fn() -> Reply + Send + Sync + 'static) -> Self {
        self.route(PREPARE, move |_| prepare())
    }

    /// Prepare answers a ready context with `content`.
    pub fn ready(self, content: &str) -> Self {
        self.answer(PREPARE, Reply::json(200, &ready(content)))
    }

    /// Prepare answers an empty context.
    pub fn empty(self) -> Self {
        self.answer(PREPARE, Reply::json(200, &empty()))
    }

    /// Captures are accepted at `position`.
    pub fn capture_position(self, position: u64) -> Self {
        self.answer(CAPTURE, Reply::json(202, &accepted(position)))
    }

    pub fn start(self) -> FakeServer {
        let Self { routes, fallback } = self;
        FakeServer(FaultServer::start(move |req| match routes.get(req.path_only()) {
            Some(handler) => handler(req),
            None => fallback(req),
        }))
    }
}

/// A loopback fake Server (see [`FakeServerBuilder`]); derefs to the [`FaultServer`] it runs on,
/// which records every request.
pub struct FakeServer(FaultServer);

impl FakeServer {
    /// Starts configuring a Server whose scope resolution answers `scope`.
    pub fn builder(scope: &str) -> FakeServerBuilder {
        let resolved = json!({"scope_id": scope, "title": "t"});
        FakeServerBuilder {
            routes: BTreeMap::new(),
            fallback: Arc::new(|_| Reply::json(404, &json!({"detail": "Not Found"}))),
        }
        .answer(RESOLVE, Reply::json(200, &resolved))
        .capture_position(7)
    }

    /// A Server resolving `scope` whose prepare answers `prepare()`.
    pub fn with_prepare(scope: &str, prepare: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
        Self::builder(scope).prepare(prepare).start()
    }
}

impl Deref for FakeServer {
    type Target = FaultServer;
    fn deref(&self) -> &FaultServer {
        &self.0
    }
}

/// What a [`Proxy`] does with requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Closes every connection unanswered: the Server is unreachable.
    Down = 0,
    /// Forwards everything and returns the answer.
    Up = 1,
    /// Forwards everything; a capture reaches the Server, but its answer never comes back.
    SwallowSourceAnswers = 2,
    /// Forwards everything but recall: a prepare request is never answered (nor forwarded).
    HangRecall = 3,
    /// Forwards everything, but a capture waits (unforwarded) until the gate changes, at most
    /// [`HOLD_LIMIT`]: a drain stays in progress, holding its lock, for as long as the test needs.
    HoldSources = 4,
}

/// The longest [`Gate::HoldSources`] holds a capture (a test that failed never releases it).
pub const HOLD_LIMIT: Duration = Duration::from_secs(60);

/// A loopback front of the real Server that the test switches between [`Gate`]s; derefs to the
/// [`FaultServer`] that records what went through.
pub struct Proxy {
    server: FaultServer,
    gate: Arc<AtomicU8>,
}

impl Proxy {
    /// Forwards (as POSTs with JSON bodies, without credentials) to `target`.
    pub fn start(target: &str, gate: Gate) -> Proxy {
        let target = target.to_owned();
        let gate = Arc::new(AtomicU8::new(gate as u8));
        let mode = Arc::clone(&gate);
        let server = FaultServer::start(move |req| {
            let mut m = mode.load(Ordering::SeqCst);
            if m == Gate::HoldSources as u8 && req.path == CAPTURE {
                let held = std::time::Instant::now();
                while m == Gate::HoldSources as u8 && held.elapsed() < HOLD_LIMIT {
                    std::thread::sleep(Duration::from_millis(10));
                    m = mode.load(Ordering::SeqCst);
                }
            }
            if m == Gate::Down as u8 {
                return Reply::Close;
            }
            let transport = Transport::new(
                BaseUrl::parse(&target).unwrap(),
                None,
                Duration::from_secs(20),
                Deadline::after(Duration::from_secs(20)),
                &Env::default(),
            )
            .unwrap();
            if m == Gate::HangRecall as u8 && req.path == PREPARE {
                return Reply::Hang;
            }
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let reply = match transport.post_json(&req.path, &body) {
                Ok(r) => Reply::json(r.status, &r.body),
                Err(_) => Reply::Close,
            };
            if m == Gate::SwallowSourceAnswers as u8 && req.path == CAPTURE {
                return Reply::Hang;
            }
            reply
        });
        Proxy { server, gate }
    }

    pub fn set(&self, gate: Gate) {
        self.gate.store(gate as u8, Ordering::SeqCst);
    }
}

impl Deref for Proxy {
    type Target = FaultServer;
    fn deref(&self) -> &FaultServer {
        &self.server
    }
}

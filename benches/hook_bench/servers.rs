//! The servers a benchmark run talks to: an instant loopback Server that answers every contract
//! route at once from canned bodies, and the content the hooks get back from it. Loopback only;
//! it never waits, sleeps or polls on the request path, so what is timed is the hook.

use powercontext_hooks_test_support::fake_server::{accepted, ready};
use powercontext_hooks_test_support::http1::Http1Server;
use serde_json::{Value, json};

/// The scope id every instant answer names.
pub const SCOPE: &str = "scp_bench000000000000000000";

/// What `/v1/context/prepare` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    Ready,
}

/// A realistic ready PreparedContext body (about 1.6 KB, the size of a few recalled decisions).
pub fn ready_content() -> String {
    let mut s = String::from("BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n");
    for i in 1..=12 {
        s.push_str(&format!(
            "- Decision {i}: the staging pipeline deploys service {i} with the blue-green script after the \
             integration suite passes.\n"
        ));
    }
    s.push_str("END_POWERCONTEXT_PREPARED_CONTEXT_V1\n");
    s
}

fn ok(status: u16, body: &Value) -> (u16, Vec<u8>) {
    (status, body.to_string().into_bytes())
}

/// A Server that answers instantly: one handler thread per connection (as the test harness does),
/// blocking reads, canned bodies serialized once.
pub fn instant(prepared: Prepared) -> Http1Server {
    let content = ready_content();
    let prepare = match prepared {
        Prepared::Ready => ok(200, &ready(&content)),
    };
    let resolve = ok(200, &json!({"scope_id": SCOPE, "title": "bench"}));
    let capture = ok(202, &accepted(7));
    let flush = ok(200, &json!({"status": "processed", "current_cursor": 7}));
    // A scope with nothing curated, as most are: the first prompt of a Pi or DSH session asks for
    // its bootstrap once and is done (a 404 here would leave the boundary pending, so every
    // prompt would ask again and no run would be warm).
    let bootstrap = ok(
        200,
        &json!({"schema": "powercontext.bootstrap-context.v1", "status": "empty",
                "reason": "no_eligible_context", "profile": "powercontext.scope-bootstrap.v1",
                "content": null, "content_bytes": 0, "package_digest": null, "items": [],
                "truncated": false, "receipt": {"receipt_id": "bcr_bench", "state": "skipped"}}),
    );
    let not_found = ok(404, &json!({"detail": "Not Found"}));
    let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    Http1Server::start(move |mut conn| {
        let Ok(Some(req)) = conn.read_request() else {
            return;
        };
        let (status, body) = match req.path_only() {
            "/v1/scope-bindings/resolve" => &resolve,
            "/v1/context/prepare" => &prepare,
            "/v1/sources/content" => &capture,
            "/v1/memory/flush" => &flush,
            "/v1/context/bootstrap" => &bootstrap,
            _ => &not_found,
        };
        let _ = conn.respond(*status, &headers, body);
        conn.close();
    })
    .expect("bind an instant loopback server")
}

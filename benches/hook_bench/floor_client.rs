//! The floor client: the smallest process that does a hook's job, built by the benchmark with the
//! hooks' release settings and std alone. It reads the host payload from stdin, sends the one
//! `POST /v1/context/prepare` to the loopback Server named by its first argument (`HOST:PORT`) on
//! a plain socket, and prints the body it got back. It must never do more than that: no scope
//! resolution, no capture, no state, no validation, no deadline — it is what a hook costs before
//! any of the safety the real hooks add, so their overhead is measured against it.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The raw JSON string literal (quotes included) of the payload's `"prompt"`, copied as-is into the
/// request: re-embedding it needs no unescaping.
fn prompt_literal(payload: &str) -> &str {
    let Some(at) = payload.find("\"prompt\"") else {
        return "\"\"";
    };
    let rest = &payload[at + 8..];
    let Some(open) = rest.find('"') else {
        return "\"\"";
    };
    let bytes = rest.as_bytes();
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return &rest[open..=i],
            _ => i += 1,
        }
    }
    "\"\""
}

fn main() {
    let addr = std::env::args()
        .nth(1)
        .expect("usage: floor_client HOST:PORT SCOPE_ID");
    let scope = std::env::args()
        .nth(2)
        .expect("usage: floor_client HOST:PORT SCOPE_ID");
    let mut payload = String::new();
    std::io::stdin().read_to_string(&mut payload).expect("read stdin");
    let body = format!(
        "{{\"scope_id\":\"{scope}\",\"query\":{},\"max_bytes\":8000}}",
        prompt_literal(&payload)
    );
    let mut conn = TcpStream::connect(&addr).expect("connect");
    let request = format!(
        "POST /v1/context/prepare HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).expect("send");
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).expect("receive");
    let at = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(reply.len(), |p| p + 4);
    let mut out = std::io::stdout().lock();
    out.write_all(&reply[at..]).expect("print");
    out.write_all(b"\n").expect("print");
}

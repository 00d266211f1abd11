//! Fake LLM endpoint on loopback so real host CLIs (Claude Code, Codex, OpenCode, Pi, DSH, Gemini
//! CLI) can finish one turn offline: speaks just enough Anthropic Messages, OpenAI Responses,
//! OpenAI Chat Completions and the Gemini API's `generateContent` (streaming and not) to return
//! one fixed text answer, and records every
//! request so tests can look for what a hook injected. It calls a tool only when started with
//! [`FakeModel::start_calling`] (Chat Completions: one call to that tool while the conversation
//! has no tool result yet), never binds a non-loopback address and never outlives its owner.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::http1::{Connection, Http1Server, RecordedRequest};

/// Model name used when a request names none (and listed by `/models`).
pub const FAKE_MODEL_NAME: &str = "fake-model";

/// Paths (query ignored) that count as model calls for [`FakeModel::model_requests`].
const MODEL_SUFFIXES: [&str; 5] = [
    "/messages",
    "/responses",
    "/chat/completions",
    ":streamGenerateContent",
    ":generateContent",
];

/// A running fake model server; dropping it stops it and closes every connection.
pub struct FakeModel {
    server: Http1Server,
    reply: Arc<str>,
}

impl FakeModel {
    /// Starts a server answering every model call with the text `reply`. Panics if loopback
    /// cannot be bound (a broken test machine).
    pub fn start(reply: &str) -> FakeModel {
        let reply: Arc<str> = Arc::from(reply);
        let answer = Arc::clone(&reply);
        let server =
            Http1Server::start(move |conn| serve(conn, &answer, None)).expect("fake model: bind 127.0.0.1:0");
        FakeModel { server, reply }
    }

    /// Like [`FakeModel::start`], but a Chat Completions call that offers the tool `tool` and
    /// carries no tool result yet is answered with one call to it with `args`; once the tool's
    /// result is in the conversation the answer is `reply`.
    pub fn start_calling(reply: &str, tool: &str, args: &Value) -> FakeModel {
        let reply: Arc<str> = Arc::from(reply);
        let answer = Arc::clone(&reply);
        let call: Arc<(String, String)> = Arc::new((tool.to_owned(), args.to_string()));
        let server = Http1Server::start(move |conn| serve(conn, &answer, Some(&call)))
            .expect("fake model: bind 127.0.0.1:0");
        FakeModel { server, reply }
    }

    /// The text of every tool result the host sent back to the model, in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.model_requests()
            .last()
            .and_then(RecordedRequest::json)
            .and_then(|b| b.get("messages").cloned())
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                other => content_texts(other).join(""),
            })
            .collect()
    }

    /// `http://127.0.0.1:PORT` without `/v1`: hosts append their own API paths per config
    /// (Claude: `ANTHROPIC_BASE_URL=<url>`; Codex/OpenCode/Pi: `<url>/v1`; DSH: `<url>`; Gemini
    /// CLI: `GOOGLE_GEMINI_BASE_URL=<url>`, which adds `/v1beta/models/<model>:…`).
    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The text every model call answers with.
    pub fn reply(&self) -> &str {
        &self.reply
    }

    /// Every request received, in arrival order (model calls, listings, probes, 404s).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// Only the model calls: `.../messages`, `.../responses`, `.../chat/completions`,
    /// `...:streamGenerateContent`, `...:generateContent`.
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(is_model_request).collect()
    }

    /// Waits until at least `n` model calls arrived; false on timeout.
    pub fn wait_for_model_requests(&self, n: usize, timeout: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.model_requests().len() >= n {
                return true;
            }
            if start.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// True when any request body contains `needle`, either as raw bytes or inside any JSON
    /// string value (so escapes such as `\n` or `\u003c` in the wire form don't hide a marker).
    pub fn any_body_contains(&self, needle: &str) -> bool {
        self.requests().iter().any(|r| body_contains(r, needle))
    }
}

/// The texts of every user message of a chat-completions body, oldest first.
pub fn user_texts(body: &Value) -> Vec<Vec<String>> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| content_texts(&m["content"]))
        .collect()
}

/// Text parts of a message `content` (a string or a list of typed parts).
pub fn content_texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether a request is a model call (by path suffix, query ignored).
pub fn is_model_request(request: &RecordedRequest) -> bool {
    let path = request.path_only().trim_end_matches('/');
    MODEL_SUFFIXES.iter().any(|s| path.ends_with(s))
}

/// Whether one request's body contains `needle` (raw bytes or any decoded JSON string).
pub fn body_contains(request: &RecordedRequest, needle: &str) -> bool {
    let raw = needle.as_bytes();
    if raw.is_empty() || request.body.windows(raw.len()).any(|w| w == raw) {
        return true;
    }
    request.json().is_some_and(|v| json_contains(&v, needle))
}

fn json_contains(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|v| json_contains(v, needle)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(needle) || json_contains(v, needle)),
        _ => false,
    }
}

fn serve(mut conn: Connection, reply: &str, call: Option<&(String, String)>) {
    let Ok(Some(request)) = conn.read_request() else {
        return;
    };
    // Errors while writing mean the host hung up; nothing useful to do about it here.
    let _ = route(&mut conn, &request, reply, call);
    conn.close();
}

fn route(
    conn: &mut Connection,
    request: &RecordedRequest,
    reply: &str,
    call: Option<&(String, String)>,
) -> std::io::Result<()> {
    let path = request.path_only().trim_end_matches('/');
    if request.method == "HEAD" {
        return conn.respond(200, &[], b"");
    }
    let body = match request.json() {
        Some(v @ Value::Object(_)) => v,
        _ => json!({}),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(FAKE_MODEL_NAME)
        .to_string();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if path.ends_with("/messages/count_tokens") {
        return send_json(conn, 200, &json!({"input_tokens": 42}));
    }
    if path.ends_with("/messages") {
        return anthropic_messages(conn, &model, reply, stream);
    }
    if path.ends_with("/responses") {
        return openai_responses(conn, &model, reply, stream);
    }
    if path.ends_with("/chat/completions") {
        if let Some((tool, args)) = call {
            let offered = body["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == tool.as_str()));
            let answered = body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if offered && !answered {
                return openai_chat_tool_call(conn, &model, tool, args, stream);
            }
        }
        return openai_chat(conn, &model, reply, stream);
    }
    // The Gemini API names its method after the model: `/v1beta/models/<model>:<method>`.
    if let Some((model_path, method)) = path.rsplit_once(':')
        && let Some(model) = model_path
            .rsplit('/')
            .next()
            .filter(|_| model_path.contains("/models/"))
    {
        match method {
            "streamGenerateContent" => return gemini_generate(conn, model, reply, true),
            "generateContent" => return gemini_generate(conn, model, reply, false),
            "countTokens" => return send_json(conn, 200, &json!({"totalTokens": 42})),
            _ => {}
        }
    }
    if path.ends_with("/models") {
        // OpenAI's `data` list plus Codex's own catalog key, so either client parses it.
        return send_json(
            conn,
            200,
            &json!({
                "object": "list",
                "data": [{"id": FAKE_MODEL_NAME, "object": "model", "created": 0, "owned_by": "fake",
                          "type": "model", "display_name": FAKE_MODEL_NAME}],
                "models": [],
                "has_more": false,
            }),
        );
    }
    send_json(
        conn,
        404,
        &json!({"error": {"type": "not_found", "message": format!("fake model: no {} {path}", request.method)}}),
    )
}

fn send_json(conn: &mut Connection, status: u16, value: &Value) -> std::io::Result<()> {
    let headers = [("content-type".to_string(), "application/json".to_string())];
    conn.respond(status, &headers, value.to_string().as_bytes())
}

/// Starts an SSE response: no length, delimited by closing the connection (hosts accept that).
fn sse_start(conn: &mut Connection) -> std::io::Result<()> {
    conn.write_head(
        200,
        &[
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
            ("connection".into(), "close".into()),
            ("request-id".into(), fake_id("req_fake_")),
        ],
    )
}

/// Writes one SSE event; each is its own write so clients see a real stream.
fn sse_event(conn: &mut Connection, event: Option<&str>, data: &Value) -> std::io::Result<()> {
    let mut out = String::new();
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
    conn.write_all(out.as_bytes())
}

fn fake_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{nanos:08x}{n:08x}")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn anthropic_messages(conn: &mut Connection, model: &str, text: &str, stream: bool) -> std::io::Result<()> {
    let id = fake_id("msg_fake_");
    let usage = |output: u64| {
        json!({"input_tokens": 10, "output_tokens": output,
               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    };
    if !stream {
        return send_json(
            conn,
            200,
            &json!({
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(3),
            }),
        );
    }
    sse_start(conn)?;
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": usage(1)}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": 3}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    for (name, data) in &events {
        sse_event(conn, Some(name), data)?;
    }
    Ok(())
}

fn openai_responses(conn: &mut Connection, model: &str, text: &str, stream: bool) -> std::io::Result<()> {
    let response_id = fake_id("resp_fake_");
    let item_id = fake_id("msg_fake_");
    let usage = json!({
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 13,
    });
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    let item = json!({"type": "message", "id": item_id, "status": "completed", "role": "assistant",
                      "content": [part]});
    let response = |status: &str, output: Value, usage: Value| {
        json!({"id": response_id, "object": "response", "created_at": unix_now(), "status": status,
               "model": model, "output": output, "usage": usage})
    };
    let done = response("completed", json!([item]), usage);
    if !stream {
        return send_json(conn, 200, &done);
    }
    sse_start(conn)?;
    let started = response("in_progress", json!([]), Value::Null);
    let mut pending_item = item.clone();
    pending_item["status"] = json!("in_progress");
    pending_item["content"] = json!([]);
    let text_ref = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
    let with_ref = |mut v: Value| {
        if let (Some(obj), Some(refs)) = (v.as_object_mut(), text_ref.as_object()) {
            obj.extend(refs.clone());
        }
        v
    };
    let events = [
        ("response.created", json!({"response": started})),
        ("response.in_progress", json!({"response": started})),
        (
            "response.output_item.added",
            json!({"output_index": 0, "item": pending_item}),
        ),
        (
            "response.content_part.added",
            with_ref(json!({"part": {"type": "output_text", "text": "", "annotations": []}})),
        ),
        ("response.output_text.delta", with_ref(json!({"delta": text}))),
        ("response.output_text.done", with_ref(json!({"text": text}))),
        ("response.content_part.done", with_ref(json!({"part": part}))),
        (
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        // Codex treats a stream without `response.completed` as failed.
        ("response.completed", json!({"response": done})),
    ];
    for (seq, (name, mut data)) in events.into_iter().enumerate() {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        sse_event(conn, Some(name), &data)?;
    }
    Ok(())
}

fn openai_chat(conn: &mut Connection, model: &str, text: &str, stream: bool) -> std::io::Result<()> {
    let id = fake_id("chatcmpl-fake");
    let created = unix_now();
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13});
    if !stream {
        return send_json(
            conn,
            200,
            &json!({
                "id": id, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": usage,
            }),
        );
    }
    sse_start(conn)?;
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    // Two content pieces, as real servers split text; split on a char boundary.
    let mid = (0..=text.len() / 2)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let mut last = chunk(json!({}), json!("stop"));
    // Usage on the final chunk satisfies clients that ask for `stream_options.include_usage`.
    last["usage"] = usage;
    let chunks = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": &text[..mid]}), Value::Null),
        chunk(json!({"content": &text[mid..]}), Value::Null),
        last,
    ];
    for data in &chunks {
        sse_event(conn, None, data)?;
    }
    conn.write_all(b"data: [DONE]\n\n")
}

/// The Gemini API's `generateContent` answer, or with `stream` its `streamGenerateContent?alt=sse`
/// form: `data:` lines without event names, each a partial `GenerateContentResponse`, the last one
/// carrying `finishReason` and `usageMetadata`.
fn gemini_generate(conn: &mut Connection, model: &str, text: &str, stream: bool) -> std::io::Result<()> {
    let id = fake_id("gemini_fake_");
    let chunk = |piece: &str, last: bool| {
        let mut candidate = json!({"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0});
        let mut out = json!({"candidates": [], "modelVersion": model, "responseId": id});
        if last {
            candidate["finishReason"] = json!("STOP");
            out["usageMetadata"] =
                json!({"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13});
        }
        out["candidates"] = json!([candidate]);
        out
    };
    if !stream {
        return send_json(conn, 200, &chunk(text, true));
    }
    sse_start(conn)?;
    // Two pieces, as the real API splits text; split on a char boundary.
    let mid = (0..=text.len() / 2)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    sse_event(conn, None, &chunk(&text[..mid], false))?;
    sse_event(conn, None, &chunk(&text[mid..], true))
}

/// One assistant turn that calls `tool` with `args` (a JSON text).
fn openai_chat_tool_call(
    conn: &mut Connection,
    model: &str,
    tool: &str,
    args: &str,
    stream: bool,
) -> std::io::Result<()> {
    let id = fake_id("chatcmpl-fake");
    let call_id = fake_id("call_fake");
    let created = unix_now();
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13});
    if !stream {
        return send_json(
            conn,
            200,
            &json!({
                "id": id, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": null, "tool_calls": [
                                 {"id": call_id, "type": "function", "function": {"name": tool, "arguments": args}}
                             ]}}],
                "usage": usage,
            }),
        );
    }
    sse_start(conn)?;
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut last = chunk(json!({}), json!("tool_calls"));
    last["usage"] = usage;
    let chunks = [
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                   "function": {"name": tool, "arguments": args}}]}),
            Value::Null,
        ),
        last,
    ];
    for data in &chunks {
        sse_event(conn, None, data)?;
    }
    conn.write_all(b"data: [DONE]\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One parsed SSE event: optional `event:` name and the raw `data:` payload.
    #[derive(Debug)]
    struct Event {
        name: Option<String>,
        data: String,
    }

    fn parse_sse(text: &str) -> Vec<Event> {
        text.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut name = None;
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        name = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push(v.to_string());
                    } else {
                        panic!("unexpected SSE line {line:?}");
                    }
                }
                Event {
                    name,
                    data: data.join("\n"),
                }
            })
            .collect()
    }

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into()
    }

    /// POSTs JSON and returns status, content type, content-length presence and body text.
    fn post(url: &str, body: &Value) -> (u16, String, bool, String) {
        let mut resp = agent().post(url).send_json(body).expect("response");
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let has_len = resp.headers().get("content-length").is_some();
        let text = resp.body_mut().read_to_string().expect("body");
        (resp.status().as_u16(), ctype, has_len, text)
    }

    #[test]
    fn anthropic_stream_has_the_claude_event_sequence_and_reply_text() {
        let fake = FakeModel::start("FAKE-OK");
        let url = format!("{}/v1/messages?beta=true", fake.url());
        let (status, ctype, has_len, text) = post(
            &url,
            &json!({"model": "claude-x", "stream": true, "messages": []}),
        );
        assert_eq!(status, 200);
        assert_eq!(ctype, "text/event-stream");
        assert!(!has_len);
        let events = parse_sse(&text);
        let names: Vec<_> = events.iter().map(|e| e.name.as_deref().unwrap_or("")).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let data: Vec<Value> = events
            .iter()
            .map(|e| serde_json::from_str(&e.data).expect("json"))
            .collect();
        for (e, d) in events.iter().zip(&data) {
            assert_eq!(Some(d["type"].as_str().expect("type")), e.name.as_deref());
        }
        assert_eq!(data[0]["message"]["model"], "claude-x");
        assert!(
            data[0]["message"]["id"]
                .as_str()
                .expect("id")
                .starts_with("msg_fake_")
        );
        assert_eq!(data[3]["delta"]["text"], "FAKE-OK");
        assert_eq!(data[5]["delta"]["stop_reason"], "end_turn");
        let reqs = fake.model_requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].path, "/v1/messages?beta=true");
    }

    #[test]
    fn anthropic_non_stream_and_count_tokens() {
        let fake = FakeModel::start("plain answer");
        let (status, ctype, _, text) = post(&format!("{}/v1/messages", fake.url()), &json!({"messages": []}));
        assert_eq!((status, ctype.as_str()), (200, "application/json"));
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["type"], "message");
        assert_eq!(v["model"], FAKE_MODEL_NAME);
        assert_eq!(v["content"][0]["text"], "plain answer");
        assert_eq!(v["stop_reason"], "end_turn");

        let (status, _, _, text) = post(&format!("{}/v1/messages/count_tokens", fake.url()), &json!({}));
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&text).expect("json"),
            json!({"input_tokens": 42})
        );
        // count_tokens is not a model call.
        assert_eq!(fake.requests().len(), 2);
        assert_eq!(fake.model_requests().len(), 1);
    }

    #[test]
    fn responses_stream_ends_with_completed_carrying_id_and_usage() {
        let fake = FakeModel::start("codex says hi");
        let (status, ctype, _, text) = post(
            &format!("{}/v1/responses", fake.url()),
            &json!({"model": "gpt-x", "stream": true, "input": []}),
        );
        assert_eq!((status, ctype.as_str()), (200, "text/event-stream"));
        let events = parse_sse(&text);
        let names: Vec<_> = events.iter().map(|e| e.name.clone().expect("named")).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let data: Vec<Value> = events
            .iter()
            .map(|e| serde_json::from_str(&e.data).expect("json"))
            .collect();
        for (i, (e, d)) in events.iter().zip(&data).enumerate() {
            assert_eq!(Some(d["type"].as_str().expect("type")), e.name.as_deref());
            assert_eq!(d["sequence_number"], json!(i));
        }
        let created_id = data[0]["response"]["id"].as_str().expect("id");
        let done = &data[8]["response"];
        assert_eq!(done["id"].as_str(), Some(created_id));
        assert!(created_id.starts_with("resp_fake_"));
        assert_eq!(done["status"], "completed");
        assert_eq!(done["model"], "gpt-x");
        assert_eq!(done["usage"]["input_tokens_details"]["cached_tokens"], 0);
        assert_eq!(done["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
        assert_eq!(done["usage"]["total_tokens"], 13);
        assert_eq!(done["output"][0]["content"][0]["text"], "codex says hi");
        assert_eq!(data[4]["delta"], "codex says hi");
        assert_eq!(data[4]["item_id"], data[7]["item"]["id"]);
    }

    #[test]
    fn responses_non_stream_is_one_completed_response() {
        let fake = FakeModel::start("r");
        let (status, _, has_len, text) = post(&format!("{}/v1/responses", fake.url()), &json!({}));
        assert_eq!(status, 200);
        assert!(has_len);
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "completed");
        assert_eq!(v["output"][0]["content"][0]["text"], "r");
    }

    #[test]
    fn chat_stream_chunks_concatenate_to_the_reply_and_end_with_done() {
        let fake = FakeModel::start("héllo wörld");
        // DSH posts to `<base>/chat/completions` without `/v1`.
        let (status, ctype, _, text) = post(
            &format!("{}/chat/completions", fake.url()),
            &json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}}),
        );
        assert_eq!((status, ctype.as_str()), (200, "text/event-stream"));
        let events = parse_sse(&text);
        assert!(events.iter().all(|e| e.name.is_none()));
        assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
        let chunks: Vec<Value> = events[..events.len() - 1]
            .iter()
            .map(|e| serde_json::from_str(&e.data).expect("json"))
            .collect();
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let content: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(content, "héllo wörld");
        let last = chunks.last().expect("final chunk");
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["usage"]["total_tokens"], 13);
        assert!(
            chunks
                .iter()
                .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "m")
        );
        assert_eq!(fake.model_requests().len(), 1);
    }

    #[test]
    fn chat_non_stream_is_one_completion() {
        let fake = FakeModel::start("ok");
        let (status, _, _, text) = post(&format!("{}/v1/chat/completions", fake.url()), &json!({}));
        assert_eq!(status, 200);
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "ok");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn models_listing_unknown_paths_and_request_filtering() {
        let fake = FakeModel::start("x");
        let mut resp = agent()
            .get(format!("{}/v1/models", fake.url()))
            .call()
            .expect("models");
        assert_eq!(resp.status(), 200);
        let v: Value = resp.body_mut().read_json().expect("json");
        assert_eq!(v["data"][0]["id"], FAKE_MODEL_NAME);
        assert_eq!(v["models"], json!([]));

        let mut resp = agent()
            .get(format!("{}/v1/nope", fake.url()))
            .call()
            .expect("404");
        assert_eq!(resp.status(), 404);
        let v: Value = resp.body_mut().read_json().expect("json");
        assert_eq!(v["error"]["type"], "not_found");

        assert_eq!(fake.requests().len(), 2);
        assert!(fake.model_requests().is_empty());
        assert!(!fake.wait_for_model_requests(1, Duration::from_millis(50)));
    }

    #[test]
    fn any_body_contains_sees_raw_and_json_escaped_markers() {
        let fake = FakeModel::start("x");
        assert!(!fake.any_body_contains("MARKER-1"));
        // A serializer that escapes `<` and newlines must not hide the marker.
        let raw = br#"{"messages":[{"role":"system","content":"\u003cctx\u003e\nMARKER-1\nline2"}]}"#;
        let resp = agent()
            .post(format!("{}/v1/messages", fake.url()))
            .content_type("application/json")
            .send(&raw[..])
            .expect("response");
        assert_eq!(resp.status(), 200);
        assert!(fake.any_body_contains("MARKER-1"));
        assert!(fake.any_body_contains("<ctx>\nMARKER-1"));
        assert!(!fake.any_body_contains("MARKER-2"));
        assert!(fake.wait_for_model_requests(1, Duration::from_secs(1)));
    }

    #[test]
    fn chunked_request_bodies_are_recorded() {
        let fake = FakeModel::start("x");
        let body = json!({"stream": false, "input": "CHUNKED-MARKER"}).to_string();
        // A reader of unknown length makes ureq send `transfer-encoding: chunked`.
        let reader = std::io::Cursor::new(body.clone().into_bytes());
        let mut resp = agent()
            .post(format!("{}/v1/responses", fake.url()))
            .content_type("application/json")
            .send(ureq::SendBody::from_reader(&mut { reader }))
            .expect("response");
        assert_eq!(resp.status(), 200);
        let _ = resp.body_mut().read_to_string();
        let req = &fake.model_requests()[0];
        assert_eq!(req.header("transfer-encoding"), Some("chunked"));
        assert_eq!(req.body_text(), body);
        assert!(fake.any_body_contains("CHUNKED-MARKER"));
    }
}

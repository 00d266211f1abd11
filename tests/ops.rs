//! `powercontext-hooks op`, the one implementation behind every host's explicit tools: its table
//! held against the pinned Server's own `/openapi.json`, reads that return data, mutations that
//! are written only when confirmed (observed on the real Server), and failures (Server down,
//! 401, a hung Server, a secret, bad arguments) that exit 1 with their code, never an empty
//! success and never the token.

use std::io::Write;
use std::process::{Output, Stdio};

use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::cli;

/// `op <args>` as the Pi shim runs it (host pi), with `input` on stdin; `(exit, JSON, stderr)`.
pub fn op(url: &str, args: &[&str], input: &Value, extra: &[(&str, &str)]) -> (i32, Value, String) {
    let home = tempfile::tempdir().unwrap();
    let mut env = vec![
        ("HOME", home.path().to_str().unwrap()),
        ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
        ("POWERCONTEXT_PI_SERVER_URL", url),
    ];
    env.extend_from_slice(extra);
    let mut all = vec!["op"];
    all.extend_from_slice(args);
    all.extend(["--host", "pi", "--json"]);
    let mut child = cli(&all, &env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out: Output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("{all:?}: not one JSON object: {stdout}"));
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn table() -> Value {
    let out = crate::support::run_cli(&["op", "--list", "--json"], &[]);
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether the table's path (`{scope}`, `{id}`, literal family) is the OpenAPI template `api`.
fn same_path(ours: &str, api: &str) -> bool {
    let a: Vec<&str> = ours.split('/').collect();
    let b: Vec<&str> = api.split('/').collect();
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || matches!(
                    (*x, *y),
                    ("{scope}", "{scope_id}") | ("{id}", "{artifact_id}") | ("atomic-memory", "{family}")
                )
        })
}

/// The OpenAPI operation at `method path` (our spelling), with its path.
fn api_op<'a>(api: &'a Value, method: &str, path: &str) -> Option<&'a Value> {
    api["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(p, _)| same_path(path, p))
        .find_map(|(_, ops)| ops.get(method.to_ascii_lowercase()))
}

/// The required members (without `scope_id`) of each shape the request body may take.
fn body_shapes(api: &Value, op: &Value) -> Vec<Vec<String>> {
    let schemas = &api["components"]["schemas"];
    let resolve = |s: &Value| -> Value {
        s["$ref"]
            .as_str()
            .map_or(s.clone(), |r| schemas[r.rsplit('/').next().unwrap()].clone())
    };
    let Some(schema) = op["requestBody"]["content"]["application/json"]["schema"].as_object() else {
        return vec![vec![]];
    };
    let schema = resolve(&Value::Object(schema.clone()));
    let variants: Vec<Value> = match schema["oneOf"].as_array() {
        Some(v) => v.iter().map(resolve).collect(),
        None => vec![schema],
    };
    variants
        .iter()
        .map(|v| {
            let mut r: Vec<String> = v["required"]
                .as_array()
                .map(|r| r.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            r.retain(|x| x != "scope_id");
            r.sort();
            r
        })
        .collect()
}

#[test]
fn the_operations_table_matches_the_pinned_servers_openapi() {
    let server = RealServer::shared();
    let (status, api) = server.get("/openapi.json");
    assert_eq!(status, 200);
    let t = table();
    let operations = t["operations"].as_array().unwrap();
    let names: Vec<&str> = operations.iter().map(|o| o["name"].as_str().unwrap()).collect();
    // The curated set of the official integrations, and nothing that decides a review.
    for needed in [
        "search",
        "memory_list",
        "memory_get",
        "remember",
        "memory_revise",
        "memory_retire",
        "handoff_activate",
        "handoff_prepare",
        "handoff_finalize",
        "handoff_commit",
        "handoff_continue",
        "task_outcome",
        "review_list",
        "review_get",
    ] {
        assert!(names.contains(&needed), "{needed} missing from {names:?}");
    }
    for o in operations {
        let (method, path) = (o["method"].as_str().unwrap(), o["path"].as_str().unwrap());
        let found = api_op(&api, method, path)
            .unwrap_or_else(|| panic!("{} {method} {path}: not in the Server's openapi", o["name"]));
        assert_eq!(found["operationId"], o["operation_id"], "{o}");
        let mut ours: Vec<String> = serde_json::from_value(o["body_required"].clone()).unwrap();
        ours.sort();
        let shapes = body_shapes(&api, found);
        assert!(
            shapes.contains(&ours),
            "{}: required {ours:?}, the Server: {shapes:?}",
            o["name"]
        );
        if let Some(first) = o["reads_first"].as_object() {
            let p = first["path"].as_str().unwrap();
            assert!(api_op(&api, "GET", p).is_some(), "{p}");
            assert_eq!(first["method"], "GET");
        }
        // The scope goes where the Server looks for it.
        let in_path = path.contains("{scope}");
        assert_eq!(o["scope"] == "path", in_path, "{o}");
        assert_eq!(o["tool"], format!("pc_{}", o["name"].as_str().unwrap()));
        assert!(!(o["mutates"] == true && method == "GET"), "{o}");
        assert_eq!(o["native_tool_hosts"], json!(["opencode", "pi", "dsh"]), "{o}");
    }
    let mutating: Vec<&str> = operations
        .iter()
        .filter(|o| o["mutates"] == true)
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        mutating,
        [
            "remember",
            "memory_revise",
            "memory_retire",
            "handoff_activate",
            "handoff_commit",
            "task_outcome"
        ]
    );
    // Candidate decisions exist on the Server and are on no tool.
    let ids: Vec<&Value> = operations.iter().map(|o| &o["operation_id"]).collect();
    for off in t["off_model_surface"].as_array().unwrap() {
        let exists = api["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|m| m.as_object().unwrap().values())
            .any(|o| o["operationId"] == *off);
        assert!(exists, "{off} is not a Server operation");
        assert!(!ids.contains(&off), "{off} is on the model surface");
    }
}

#[test]
fn op_reads_return_data_and_only_a_confirmed_mutation_is_written() {
    let server = RealServer::shared();
    let url = server.url();
    let scope = server.create_scope("explicit ops");
    let s = ["--scope", scope.as_str()];
    let listed = || {
        let (status, page) = server.post(
            "/v1/atomic-memory/list",
            &json!({"scope_id": scope, "states": ["active", "forgotten"]}),
        );
        assert_eq!(status, 200, "{page}");
        page["items"].as_array().unwrap().clone()
    };
    let fact = json!({"kind": "decision", "text": "Rule cobalt-heron-4: releases are tagged on main."});

    // Not confirmed: confirmation_required, exit 1, nothing on the Server.
    let (code, r, err) = op(&url, &[&["remember"][..], &s].concat(), &fact, &[]);
    assert_eq!(
        (code, r["ok"].clone(), r["code"].clone()),
        (1, json!(false), json!("confirmation_required")),
        "{r} {err}"
    );
    let (code, r, _) = op(
        &url,
        &[&["remember"][..], &s].concat(),
        &json!({"kind": "decision", "text": "x", "confirmed": false}),
        &[],
    );
    assert_eq!(
        (code, r["code"].clone()),
        (1, json!("confirmation_required")),
        "{r}"
    );
    assert!(listed().is_empty(), "an unconfirmed mutation wrote");

    // Confirmed (flag or field): written, and the Server holds it.
    let (code, r, err) = op(&url, &[&["remember", "--confirmed"][..], &s].concat(), &fact, &[]);
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(r["ok"], true);
    let id = r["data"]["records"][0]["artifact"]["artifact_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let items = listed();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["text"], fact["text"]);

    // Reads return data.
    let (code, r, _) = op(
        &url,
        &[&["search"][..], &s].concat(),
        &json!({"query": "cobalt heron releases"}),
        &[],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["data"]["hits"][0]["memory"]["text"], fact["text"], "{r}");
    let (code, r, _) = op(&url, &[&["memory_list"][..], &s].concat(), &json!({}), &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        r["data"]["entries"][0]["artifact"]["artifact_id"],
        json!(id),
        "{r}"
    );
    let (code, r, _) = op(&url, &[&["memory_get"][..], &s].concat(), &json!({"id": id}), &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["data"]["content"]["text"], fact["text"], "{r}");
    let (code, r, _) = op(&url, &[&["review_list"][..], &s].concat(), &json!({}), &[]);
    assert_eq!(code, 0, "{r}");
    assert!(r["data"]["candidates"].is_array(), "{r}");

    // Revise and retire: unconfirmed they change nothing; confirmed they do.
    let revised = json!({"id": id, "text": "Rule cobalt-heron-4: releases are tagged on main, signed."});
    let (code, r, _) = op(&url, &[&["memory_revise"][..], &s].concat(), &revised, &[]);
    assert_eq!((code, r["code"].clone()), (1, json!("confirmation_required")));
    assert_eq!(listed()[0]["text"], fact["text"]);
    let mut confirmed = revised.clone();
    confirmed["confirmed"] = json!(true);
    let (code, r, err) = op(&url, &[&["memory_revise"][..], &s].concat(), &confirmed, &[]);
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(listed()[0]["text"], revised["text"]);
    assert_eq!(listed()[0]["kind"], "decision", "the kind is kept");
    let (code, r, _) = op(
        &url,
        &[&["memory_retire"][..], &s].concat(),
        &json!({"id": id}),
        &[],
    );
    assert_eq!((code, r["code"].clone()), (1, json!("confirmation_required")));
    assert_eq!(listed()[0]["state"], "active");
    let (code, r, err) = op(
        &url,
        &[&["memory_retire", "--confirmed"][..], &s].concat(),
        &json!({"id": id}),
        &[],
    );
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(listed()[0]["state"], "forgotten");

    // A missing memory is not_found, not an empty success.
    let (code, r, _) = op(
        &url,
        &[&["memory_get"][..], &s].concat(),
        &json!({"id": "art_00000000000000000000000000000000"}),
        &[],
    );
    assert_eq!(
        (code, r["ok"].clone(), r["code"].clone()),
        (1, json!(false), json!("not_found")),
        "{r}"
    );
    // A scope the caller names in the arguments is ignored: the write lands in the hooks' scope.
    let other = server.create_scope("explicit ops other");
    let (code, r, _) = op(
        &url,
        &[&["remember", "--confirmed"][..], &s].concat(),
        &json!({"kind": "decision", "text": "Rule jade-finch-1: small commits.", "scope_id": other}),
        &[],
    );
    assert_eq!(code, 0, "{r}");
    let (_, page) = server.post("/v1/atomic-memory/list", &json!({"scope_id": other}));
    assert_eq!(page["items"], json!([]), "{page}");
}

#[test]
fn op_failures_are_visible_with_their_code_and_never_show_the_token() {
    let dead = powercontext_hooks_test_support::fault_server::closed_port_url();
    let remember = json!({"kind": "decision", "text": "Rule x."});
    for (name, input, confirmed) in [
        ("search", json!({"query": "q"}), false),
        ("remember", remember.clone(), true),
    ] {
        let mut args = vec![name, "--scope", "scp_x"];
        if confirmed {
            args.push("--confirmed");
        }
        let (code, r, err) = op(&dead, &args, &input, &[]);
        assert_eq!(
            (code, r["ok"].clone(), r["code"].clone()),
            (1, json!(false), json!("server_unavailable")),
            "{r} {err}"
        );
        assert!(
            r["message"].as_str().unwrap().contains("is the Server running"),
            "{r}"
        );
    }

    // A Server that never answers: timeout, within the request timeout, not a hang.
    let hung = FaultServer::always(Reply::Hang);
    let (code, r, _) = op(
        &hung.url(),
        &["search", "--scope", "scp_x"],
        &json!({"query": "q"}),
        &[],
    );
    assert_eq!((code, r["code"].clone()), (1, json!("timeout")), "{r}");

    // Auth on: no token is auth_failed; the token in the environment works and is never shown.
    let server = RealServer::shared_auth();
    let token = server.token().unwrap();
    let scope = server.create_scope("explicit ops auth");
    let (code, r, _) = op(
        &server.url(),
        &["memory_list", "--scope", &scope],
        &json!({}),
        &[],
    );
    assert_eq!(
        (code, r["code"].clone(), r["status"].clone()),
        (1, json!("auth_failed"), json!(401)),
        "{r}"
    );
    let bearer = format!("Bearer {token}");
    let with = [("POWERCONTEXT_PI_AUTHORIZATION", bearer.as_str())];
    let (code, r, err) = op(
        &server.url(),
        &["remember", "--confirmed", "--scope", &scope],
        &remember,
        &with,
    );
    assert_eq!(code, 0, "{r} {err}");
    let (code, r2, err2) = op(
        &server.url(),
        &["memory_list", "--scope", &scope],
        &json!({}),
        &with,
    );
    assert_eq!(code, 0, "{r2}");
    for text in [r.to_string(), err, r2.to_string(), err2] {
        assert!(!text.contains(token), "the token leaked: {text}");
    }

    // A secret in a write is refused before anything is sent; the answer does not quote it.
    let secret = "sk-live0123456789abcdefABCDEF";
    let target = FaultServer::always(Reply::json(200, &json!({})));
    let (code, r, err) = op(
        &target.url(),
        &["remember", "--confirmed", "--scope", "scp_x"],
        &json!({"kind": "decision", "text": format!("the key is {secret}")}),
        &[],
    );
    assert_eq!((code, r["code"].clone()), (1, json!("secret_refused")), "{r}");
    assert!(!r.to_string().contains(secret) && !err.contains(secret));
    assert_eq!(target.request_count(), 0, "a refused write reached the Server");

    // Bad arguments: invalid_arguments, nothing sent.
    for (name, input) in [
        ("remember", json!({"kind": "decision"})),
        ("memory_get", json!({})),
        ("nope", json!({})),
    ] {
        let (code, r, _) = op(
            &target.url(),
            &[name, "--confirmed", "--scope", "scp_x"],
            &input,
            &[],
        );
        assert_eq!(
            (code, r["code"].clone()),
            (1, json!("invalid_arguments")),
            "{name}: {r}"
        );
    }
    let (code, r, _) = op(&target.url(), &["search", "--scope", "scp_x"], &json!([1]), &[]);
    assert_eq!((code, r["code"].clone()), (1, json!("invalid_arguments")), "{r}");
    assert_eq!(target.request_count(), 0);
    // The Server's 422 is invalid_arguments with its status, not a success.
    let (code, r, _) = op(
        &server.url(),
        &["search", "--scope", &scope],
        &json!({"query": "q", "limit": "many"}),
        &with,
    );
    assert_eq!(
        (code, r["code"].clone(), r["status"].clone()),
        (1, json!("invalid_arguments"), json!(422)),
        "{r}"
    );
}

#[test]
fn an_empty_answer_is_never_a_success() {
    for body in [json!({}), json!(null), json!([])] {
        let server = FaultServer::always(Reply::json(200, &body));
        for (args, input) in [
            (vec!["search", "--scope", "scp_x"], json!({"query": "q"})),
            (
                vec!["remember", "--confirmed", "--scope", "scp_x"],
                json!({"kind": "decision", "text": "Rule x."}),
            ),
        ] {
            let (code, r, err) = op(&server.url(), &args, &input, &[]);
            assert_eq!(
                (code, r["ok"].clone(), r["code"].clone()),
                (1, json!(false), json!("invalid_response")),
                "{body}: {r} {err}"
            );
        }
    }
}

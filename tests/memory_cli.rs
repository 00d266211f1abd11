//! `remember`, `search`, `list` and `pin` by what `list` shows, against the real pinned Server: the
//! journey from nothing to a pinned memory without a raw request, the secret filter in front of
//! `remember`, and failures that exit 1 with their fix (never failing open).

use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::run_cli;

/// Our CLI against `server` with a throwaway HOME and no config file; `(exit code, JSON, stderr)`.
fn cli(server: &RealServer, args: &[&str], extra: &[(&str, &str)]) -> (i32, Value, String) {
    let home = tempfile::tempdir().unwrap();
    let mut env = vec![
        ("HOME", home.path().to_str().unwrap().to_owned()),
        ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml".to_owned()),
        ("POWERCONTEXT_CLAUDE_SERVER_URL", server.url()),
    ];
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut args = args.to_vec();
    args.push("--json");
    let out = run_cli(&args, &env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("{args:?}: not one JSON object: {stdout}"));
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tags(server: &RealServer, scope: &str, id: &str) -> Vec<String> {
    let (status, body) = server.get(&format!("/v1/scopes/{scope}/artifacts/atomic-memory/{id}/tags"));
    assert_eq!(status, 200, "{body}");
    serde_json::from_value(body["tags"].clone()).unwrap()
}

#[test]
fn remember_list_search_and_pin_by_number_and_short_id() {
    let server = RealServer::shared();
    let scope = server.create_scope("memory journey");
    let s = ["--scope", scope.as_str()];
    let fact = "Rule quartz-lantern-7: tag releases from main only.";

    let (code, r, err) = cli(server, &[&["remember", fact][..], &s].concat(), &[]);
    assert_eq!(code, 0, "{r} {err}");
    let id = r["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("art_"), "{r}");
    assert!(id.starts_with(r["short_id"].as_str().unwrap()), "{r}");
    // The Server holds exactly that text in that scope.
    let (status, page) = server.post("/v1/atomic-memory/list", &json!({"scope_id": scope}));
    assert_eq!(status, 200, "{page}");
    let texts: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, [fact]);

    // A second memory, so numbers and short ids have something to tell apart.
    let other = "Rule amber-kite-3: the changelog is written by hand.";
    let (code, second, _) = cli(
        server,
        &[&["remember", other, "--kind", "decision"][..], &s].concat(),
        &[],
    );
    assert_eq!(code, 0, "{second}");
    assert_eq!(second["kind"], "decision");

    let (code, listed, _) = cli(server, &[&["list"][..], &s].concat(), &[]);
    assert_eq!(code, 0, "{listed}");
    let rows = listed["memories"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{listed}");
    assert!(rows.iter().all(|r| r["pinned"] == false), "{listed}");
    let n_of = |id: &str| {
        rows.iter().find(|r| r["id"] == id).unwrap()["n"]
            .as_u64()
            .unwrap()
            .to_string()
    };

    let (code, found, _) = cli(server, &[&["search", "quartz-lantern-7"][..], &s].concat(), &[]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(found["memories"][0]["id"], id.as_str(), "{found}");

    // `pin N`: the N of `list`.
    let (code, pinned, _) = cli(server, &[&["pin", &n_of(&id)][..], &s].concat(), &[]);
    assert_eq!(code, 0, "{pinned}");
    assert_eq!(pinned["artifact_id"], id.as_str());
    assert_eq!(tags(server, &scope, &id), ["bootstrap-context"]);
    let other_id = second["id"].as_str().unwrap();
    assert!(tags(server, &scope, other_id).is_empty());
    let (_, listed, _) = cli(server, &[&["list", "--pinned"][..], &s].concat(), &[]);
    let pinned_rows = listed["memories"].as_array().unwrap();
    assert_eq!(pinned_rows.len(), 1, "{listed}");
    assert_eq!(pinned_rows[0]["id"], id.as_str());

    // `unpin <short id>`: the id as `list` shows it.
    let (code, unpinned, _) = cli(
        server,
        &[&["unpin", r["short_id"].as_str().unwrap()][..], &s].concat(),
        &[],
    );
    assert_eq!(code, 0, "{unpinned}");
    assert_eq!(unpinned["changed"], true);
    assert!(tags(server, &scope, &id).is_empty());

    // A number `list` does not show is refused, naming `list`.
    let (code, none, _) = cli(server, &[&["pin", "9"][..], &s].concat(), &[]);
    assert_eq!(code, 1, "{none}");
    assert!(
        none["error"]
            .as_str()
            .unwrap()
            .contains("powercontext-hooks list"),
        "{none}"
    );
}

#[test]
fn remember_refuses_a_secret_and_stores_nothing() {
    let server = RealServer::shared();
    let scope = server.create_scope("memory secret");
    let secret = "ghp_Q8t1v3Zr7Kx2Lm9Np4Hs6Wd0Yb5Jc1Fa3Ee7";
    let (code, r, err) = cli(
        server,
        &[
            "remember",
            &format!("the deploy token is {secret}"),
            "--scope",
            &scope,
        ],
        &[],
    );
    assert_eq!(code, 1, "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("looks like a secret"), "{error}");
    assert!(!r.to_string().contains(secret) && !err.contains(secret));
    let (status, page) = server.post("/v1/atomic-memory/list", &json!({"scope_id": scope}));
    assert_eq!(status, 200);
    assert_eq!(page["items"], json!([]), "nothing stored");
}

#[test]
fn explicit_operations_never_fail_open_and_never_print_the_token() {
    // No Server: exit 1 with the fix, for a read and for a write.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    for args in [
        &["list"][..],
        &["remember", "a fact"],
        &["search", "fact"],
        &["pin", "1"],
    ] {
        let home = tempfile::tempdir().unwrap();
        let mut all = args.to_vec();
        all.extend(["--scope", "scp_x", "--json"]);
        let out = run_cli(
            &all,
            &[
                ("HOME", home.path().to_str().unwrap()),
                ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
                ("POWERCONTEXT_CLAUDE_SERVER_URL", &dead),
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], false);
        assert!(
            v["error"].as_str().unwrap().contains("is the Server running"),
            "{v}"
        );
    }

    // A Server with auth: without the token it says which one to check; with it, it works and
    // the token is printed nowhere.
    let server = RealServer::shared_auth();
    let token = server.token().unwrap();
    let scope = server.create_scope("memory auth");
    let (code, r, _) = cli(server, &["list", "--scope", &scope], &[]);
    assert_eq!(code, 1, "{r}");
    assert!(r["error"].as_str().unwrap().contains("check the token"), "{r}");
    let bearer = format!("Bearer {token}");
    let with = [("POWERCONTEXT_CLAUDE_AUTHORIZATION", bearer.as_str())];
    let (code, r, err) = cli(
        server,
        &[
            "remember",
            "Rule slate-otter-2: squash before merge.",
            "--scope",
            &scope,
        ],
        &with,
    );
    assert_eq!(code, 0, "{r} {err}");
    let (code, listed, err2) = cli(server, &["list", "--scope", &scope], &with);
    assert_eq!(code, 0, "{listed}");
    for text in [r.to_string(), listed.to_string(), err, err2] {
        assert!(!text.contains(token), "the token leaked: {text}");
    }
}

#[test]
fn explicit_operations_follow_no_redirect_and_read_no_oversized_answer() {
    use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
    let target = FaultServer::start(|_| Reply::json(200, &json!({"items": [], "next_cursor": null})));
    let to = format!("{}/v1/atomic-memory/list", target.url());
    let redirecting = FaultServer::start(move |_| Reply::Redirect {
        status: 307,
        location: to.clone(),
    });
    let oversized = FaultServer::start(|_| Reply::Oversized {
        status: 200,
        size: 2 * 1024 * 1024,
        declared_length: false,
    });
    for (server, what) in [(&redirecting, "redirect"), (&oversized, "oversized")] {
        let home = tempfile::tempdir().unwrap();
        let out = run_cli(
            &["list", "--scope", "scp_x", "--json"],
            &[
                ("HOME", home.path().to_str().unwrap()),
                ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
                ("POWERCONTEXT_CLAUDE_SERVER_URL", &server.url()),
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{what}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["error"].as_str().unwrap().contains("invalid_response"),
            "{what}: {v}"
        );
    }
    assert_eq!(target.request_count(), 0, "the redirect was never followed");
}

//! The explicit tools in the real hosts: a fake model calls one `pc_*` tool, the host runs it
//! through our shim and `powercontext-hooks op`, and the real Server shows what was written.
//! Pi: `pi -p` has no UI (a mutation answers confirmation_required, nothing written), `pi --mode
//! rpc` asks through its UI protocol (approved: written; denied: cancelled, nothing written).
//! OpenCode: `opencode run` rejects a permission ask (nothing written), `--auto` approves it.
//! Failures (Server down, 401) reach the model as errors with their code.

use std::path::Path;
use std::time::Duration;

use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::host_pi::PiSession;
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::PI;

const REPLY: &str = "FAKE-OPS-ANSWER-OK";

/// The active memories' texts in `scope`.
fn memories(server: &RealServer, scope: &str) -> Vec<String> {
    let (status, page) = server.post("/v1/atomic-memory/list", &json!({"scope_id": scope}));
    assert_eq!(status, 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The one tool result the host sent back, parsed (the shim's JSON, possibly inside an error).
#[track_caller]
fn tool_result(model: &FakeModel) -> Value {
    let results = model.tool_results();
    assert_eq!(results.len(), 1, "one tool result expected: {results:?}");
    let text = &results[0];
    let start = text
        .find('{')
        .unwrap_or_else(|| panic!("no JSON in the tool result: {text}"));
    let end = text.rfind('}').unwrap();
    serde_json::from_str(&text[start..=end]).unwrap_or_else(|_| panic!("tool result: {text}"))
}

fn pi_session(model: &FakeModel, url: &str, scope: &str, extra: &[(&str, &str)]) -> PiSession {
    let mut b = PiSession::builder(&model.url())
        .hook(Path::new(PI))
        .env("POWERCONTEXT_PI_SERVER_URL", url)
        .env("POWERCONTEXT_PI_SCOPE_ID", scope)
        .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1");
    for (k, v) in extra {
        b = b.env(k, v);
    }
    b.build()
}

#[test]
fn e2e_ops_pi_without_ui_a_mutation_is_confirmation_required_and_writes_nothing() {
    let server = RealServer::shared();
    let scope = server.create_scope("pi ops no ui");
    let text = "Rule basalt-wren-5: deploys wait for green CI.";
    // The model even claims confirmation in its arguments: only the user's answer counts.
    let model = FakeModel::start_calling(
        REPLY,
        "pc_remember",
        &json!({"kind": "decision", "text": text, "confirmed": true}),
    );
    let pi = pi_session(&model, &server.url(), &scope, &[]);
    let run = pi.print("remember that deploys wait for green CI");
    run.assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(
        (r["ok"].clone(), r["code"].clone()),
        (json!(false), json!("confirmation_required")),
        "{r}"
    );
    assert!(memories(server, &scope).is_empty(), "a mutation without UI wrote");
}

#[test]
fn e2e_ops_pi_a_read_tool_returns_the_servers_data() {
    let server = RealServer::shared();
    let scope = server.create_scope("pi ops read");
    server.remember(&scope, "Rule ochre-lynx-8: benchmarks run on the quiet machine.");
    let model = FakeModel::start_calling(REPLY, "pc_search", &json!({"query": "ochre lynx benchmarks"}));
    let pi = pi_session(&model, &server.url(), &scope, &[]);
    pi.print("where do benchmarks run").assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        r["data"]["hits"][0]["memory"]["text"], "Rule ochre-lynx-8: benchmarks run on the quiet machine.",
        "{r}"
    );
}

/// One RPC prompt whose tool call the "user" answers with `approve`; the confirm dialog's text.
fn pi_rpc_confirm(pi: &PiSession, approve: bool) -> Value {
    let mut rpc = pi.rpc();
    rpc.send(&json!({"id": "1", "type": "prompt", "message": "remember the deploy rule"}));
    let ask = rpc.wait_for("confirm dialog", Duration::from_secs(60), |e| {
        e["type"] == "extension_ui_request" && e["method"] == "confirm"
    });
    rpc.send(&json!({"type": "extension_ui_response", "id": ask["id"], "confirmed": approve}));
    rpc.wait_for("agent_end", Duration::from_secs(60), |e| e["type"] == "agent_end");
    let _ = rpc.finish(Duration::from_secs(15));
    ask
}

#[test]
fn e2e_ops_pi_rpc_an_approved_mutation_is_written_and_a_denied_one_is_not() {
    let server = RealServer::shared();
    let text = "Rule umber-moth-2: migrations are reviewed twice.";
    let args = json!({"kind": "decision", "text": text});

    let scope = server.create_scope("pi ops denied");
    let model = FakeModel::start_calling(REPLY, "pc_remember", &args);
    let pi = pi_session(&model, &server.url(), &scope, &[]);
    let ask = pi_rpc_confirm(&pi, false);
    assert!(
        ask["message"].as_str().unwrap_or_default().contains("remember"),
        "{ask}"
    );
    let r = tool_result(&model);
    assert_eq!(r["code"], "cancelled", "{r}");
    assert!(memories(server, &scope).is_empty(), "a denied mutation wrote");

    let scope = server.create_scope("pi ops approved");
    let model = FakeModel::start_calling(REPLY, "pc_remember", &args);
    let pi = pi_session(&model, &server.url(), &scope, &[]);
    pi_rpc_confirm(&pi, true);
    let r = tool_result(&model);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(memories(server, &scope), [text]);
}

#[test]
fn e2e_ops_pi_server_down_timeout_and_401_are_visible_tool_errors() {
    let dead = powercontext_hooks_test_support::fault_server::closed_port_url();
    let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
    let pi = pi_session(&model, &dead, "scp_x", &[]);
    pi.print("list the memories").assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(
        (r["ok"].clone(), r["code"].clone()),
        (json!(false), json!("server_unavailable")),
        "{r}"
    );

    // A Server that never answers: the tool reports a timeout (the CLI's 5 s request timeout).
    let hung = powercontext_hooks_test_support::fault_server::FaultServer::always(
        powercontext_hooks_test_support::fault_server::Reply::Hang,
    );
    let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
    let pi = pi_session(&model, &hung.url(), "scp_x", &[]);
    pi.print("list the memories").assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(
        (r["ok"].clone(), r["code"].clone()),
        (json!(false), json!("timeout")),
        "{r}"
    );

    let server = RealServer::shared_auth();
    let scope = server.create_scope("pi ops 401");
    let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
    let pi = pi_session(&model, &server.url(), &scope, &[]);
    pi.print("list the memories").assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(
        (r["code"].clone(), r["status"].clone()),
        (json!("auth_failed"), json!(401)),
        "{r}"
    );
    // With the token (from the environment, never argv) the same tool works, and the token is
    // in no tool result the model saw.
    let token = server.token().unwrap();
    let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
    let bearer = format!("Bearer {token}");
    let pi = pi_session(
        &model,
        &server.url(),
        &scope,
        &[("POWERCONTEXT_PI_AUTHORIZATION", &bearer)],
    );
    pi.print("list the memories").assert_answered(REPLY);
    let r = tool_result(&model);
    assert_eq!(r["ok"], true, "{r}");
    assert!(!model.any_body_contains(token), "the token reached the model");
}

mod opencode {
    use powercontext_hooks_test_support::fake_model::FakeModel;
    use powercontext_hooks_test_support::host_opencode::OpenCodeSession;
    use powercontext_hooks_test_support::real_server::RealServer;
    use serde_json::json;
    use std::path::Path;

    use super::{REPLY, memories, tool_result};
    use crate::support::OPENCODE;

    /// OpenCode with our plugin, the Server at `url` and `scope`, and no permission rule of the
    /// user's own (the plugin makes `powercontext` an `ask`).
    fn session(model: &FakeModel, url: &str, scope: &str) -> OpenCodeSession {
        OpenCodeSession::builder(model)
            .hook(Path::new(OPENCODE))
            .server_url(url)
            .env("POWERCONTEXT_OPENCODE_SCOPE_ID", scope)
            .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
            .build()
    }

    #[test]
    fn e2e_ops_opencode_a_rejected_ask_writes_nothing_and_an_approved_one_writes() {
        let server = RealServer::shared();
        let text = "Rule sienna-crane-6: feature flags expire in a month.";
        let args = json!({"kind": "decision", "text": text, "confirmed": true});

        // `opencode run` cannot show the ask: OpenCode rejects it, the tool runs nothing.
        let scope = server.create_scope("opencode ops rejected");
        let model = FakeModel::start_calling(REPLY, "pc_remember", &args);
        let oc = session(&model, &server.url(), &scope);
        let run = oc.prompt("remember the feature flag rule");
        assert!(
            model
                .model_requests()
                .iter()
                .any(|r| r.json().is_some_and(|b| b["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "pc_remember")))),
            "pc_remember was not offered: {}",
            run.stderr
        );
        assert!(
            run.stdout.contains("permission") || run.stderr.contains("permission"),
            "{}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(memories(server, &scope).is_empty(), "a rejected ask wrote");

        // `--auto` answers the ask with approval: written, the result reaches the model.
        let scope = server.create_scope("opencode ops approved");
        let model = FakeModel::start_calling(REPLY, "pc_remember", &args);
        let oc = session(&model, &server.url(), &scope);
        let run = oc.run(&[
            "run",
            "--format",
            "json",
            "--auto",
            "remember the feature flag rule",
        ]);
        let r = tool_result(&model);
        assert_eq!(r["ok"], true, "{r}\n{}", run.stderr);
        assert_eq!(memories(server, &scope), [text]);
    }

    #[test]
    fn e2e_ops_opencode_reads_return_data_and_a_down_server_is_a_tool_error() {
        let server = RealServer::shared();
        let scope = server.create_scope("opencode ops read");
        server.remember(&scope, "Rule teal-otter-9: logs rotate daily.");
        let model = FakeModel::start_calling(REPLY, "pc_search", &json!({"query": "teal otter logs"}));
        let oc = session(&model, &server.url(), &scope);
        let run = oc.prompt("how do logs rotate");
        let r = tool_result(&model);
        assert_eq!(r["ok"], true, "{r}\n{}", run.stderr);
        assert_eq!(
            r["data"]["hits"][0]["memory"]["text"],
            "Rule teal-otter-9: logs rotate daily."
        );

        let dead = powercontext_hooks_test_support::fault_server::closed_port_url();
        let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
        let oc = session(&model, &dead, "scp_x");
        let run = oc.prompt("list the memories");
        let r = tool_result(&model);
        assert_eq!(
            (r["ok"].clone(), r["code"].clone()),
            (json!(false), json!("server_unavailable")),
            "{r}\n{}",
            run.stderr
        );
    }
}

mod dsh {
    use powercontext_hooks_test_support::fake_model::FakeModel;
    use powercontext_hooks_test_support::host_dsh::DshSession;
    use powercontext_hooks_test_support::real_server::RealServer;
    use serde_json::json;
    use std::path::Path;

    use super::{REPLY, memories, tool_result};
    use crate::support::DSH;

    fn session(model: &FakeModel, url: &str, scope: &str, approval: Option<&str>) -> DshSession {
        let mut b = DshSession::builder(model)
            .hook(Path::new(DSH))
            .server_url(url)
            .env("POWERCONTEXT_DSH_SCOPE_ID", scope)
            .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1");
        if let Some(a) = approval {
            b = b.approval(a);
        }
        b.build()
    }

    #[test]
    fn e2e_ops_dsh_a_mutation_asks_first_and_writes_only_when_approved() {
        let server = RealServer::shared();
        let text = "Rule indigo-bison-3: hotfixes get a test first.";
        let args = json!({"kind": "decision", "text": text, "confirmed": true});
        for (approval, written) in [
            (None, false),
            (Some("rejected"), false),
            (Some("allowed-once"), true),
        ] {
            let scope = server.create_scope(&format!("dsh ops {approval:?}"));
            let model = FakeModel::start_calling(REPLY, "pc_remember", &args);
            let dsh = session(&model, &server.url(), &scope, approval);
            let run = dsh.run("remember the hotfix rule");
            let results = model.tool_results();
            assert_eq!(
                results.len(),
                1,
                "{approval:?}: {results:?}\n{}\n{}",
                run.stdout,
                run.stderr
            );
            if written {
                let r = tool_result(&model);
                assert_eq!(r["ok"], true, "{r}");
                assert_eq!(memories(server, &scope), [text]);
            } else {
                assert!(!results[0].contains("\"ok\":true"), "{approval:?}: {results:?}");
                assert!(
                    memories(server, &scope).is_empty(),
                    "{approval:?}: a mutation without approval wrote"
                );
            }
        }
    }

    #[test]
    fn e2e_ops_dsh_reads_return_data_and_a_401_is_a_tool_error() {
        let server = RealServer::shared();
        let scope = server.create_scope("dsh ops read");
        server.remember(&scope, "Rule mauve-heron-1: docs build in CI.");
        let model = FakeModel::start_calling(REPLY, "pc_search", &json!({"query": "mauve heron docs"}));
        let dsh = session(&model, &server.url(), &scope, None);
        let run = dsh.run("where do docs build");
        let r = tool_result(&model);
        assert_eq!(r["ok"], true, "{r}\n{}", run.stderr);
        assert_eq!(
            r["data"]["hits"][0]["memory"]["text"],
            "Rule mauve-heron-1: docs build in CI."
        );

        let auth = RealServer::shared_auth();
        let scope = auth.create_scope("dsh ops 401");
        let model = FakeModel::start_calling(REPLY, "pc_memory_list", &json!({}));
        let dsh = session(&model, &auth.url(), &scope, None);
        let run = dsh.run("list the memories");
        let r = tool_result(&model);
        assert_eq!(
            (r["ok"].clone(), r["code"].clone()),
            (json!(false), json!("auth_failed")),
            "{r}\n{}",
            run.stderr
        );
    }
}

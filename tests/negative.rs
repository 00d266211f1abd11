//! The negative experiments of the hooks contract, run the same way against every host
//! executable: unknown schema, oversized bodies, a hanging Server, redirects, 401/403, a Server
//! that is down, and a panic in the release binary. Each must fail open — exit 0, no injection,
//! a content-free diagnostic — so "equal negative-test depth on every host" holds by construction.

use std::path::Path;
use std::time::Duration;

use powercontext_hooks_core::host::{Integration, OutputChannel};
use powercontext_hooks_test_support::fake_server::{BOOTSTRAP, FLUSH, FakeServer, ready};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hook::{HookCmd, HookOutput, prompt_payload};
use serde_json::{Value, json};

use crate::support::{hook_exe, release_exe};

const SCOPE: &str = "scp_negscopeSECRET000000000";
const TOKEN: &str = "tok-NEGSECRET-9999";
const PROMPT: &str = "Where is the NEGPROMPT deployment runbook?";
const CONTENT: &str = "NEGCONTENT: the runbook lives in ops/deploy.md";

/// One host executable, driven the way its host (or thin shim) drives it.
#[derive(Clone, Copy)]
struct HostCase {
    host: Integration,
    name: &'static str,
    exe: &'static str,
    /// `POWERCONTEXT_<PART>_…`.
    part: &'static str,
    /// A Claude-style command hook (its row's output is not a shim's protocol).
    command_hook: bool,
    /// Whether what it injects stays in the host's conversation (the row's capability).
    persists: bool,
}

/// Every host, as [`Integration::ALL`] lists them.
fn hosts() -> [HostCase; Integration::ALL.len()] {
    Integration::ALL.map(|host| HostCase {
        host,
        name: host.as_str(),
        exe: hook_exe(host),
        part: host.env_part(),
        command_hook: host.spec().output != OutputChannel::Shim,
        persists: host.injection_persists(),
    })
}

/// What one prompt turn did on a host: every process output, and the injected text, if any.
struct TurnResult {
    outputs: Vec<HookOutput>,
    injected: Option<String>,
}

impl TurnResult {
    fn stderr(&self) -> String {
        self.outputs
            .iter()
            .map(|o| o.stderr.as_str())
            .collect::<Vec<_>>()
            .join("")
    }

    fn diagnostics(&self) -> Vec<Value> {
        self.outputs.iter().flat_map(HookOutput::diagnostics).collect()
    }

    /// The recall diagnostic (the prepare stage, or scope resolution when it failed first).
    fn recall_outcome(&self) -> Value {
        self.diagnostics()
            .into_iter()
            .find(|d| d["event"] == "context_prepare" || d["event"] == "scope_resolve")
            .unwrap_or_else(|| panic!("no recall diagnostic: {}", self.stderr()))
    }

    #[track_caller]
    fn assert_fail_open(&self, host: &str) {
        for out in &self.outputs {
            assert!(
                out.status.success(),
                "{host}: exit {:?}: {}",
                out.status,
                out.stderr
            );
        }
        for leak in [TOKEN, "NEGPROMPT", SCOPE, "NEGCONTENT", "NEGBODY"] {
            assert!(
                !self.stderr().contains(leak),
                "{host}: stderr leaks {leak}: {}",
                self.stderr()
            );
        }
    }
}

impl HostCase {
    fn cmd(&self, exe: &str, url: &str, state: &Path, extra: &[(&str, &str)]) -> HookCmd {
        let mut cmd = HookCmd::new(exe)
            .env(&format!("POWERCONTEXT_{}_SERVER_URL", self.part), url)
            .env(
                &format!("POWERCONTEXT_{}_AUTHORIZATION", self.part),
                format!("Bearer {TOKEN}"),
            )
            .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy());
        for (k, v) in extra {
            cmd = cmd.env(&k.replace("<H>", self.part), *v);
        }
        cmd
    }

    /// Runs one prompt turn as the host would, with `exe` (debug or release build).
    fn turn_with(&self, exe: &str, url: &str, extra: &[(&str, &str)]) -> TurnResult {
        self.turn_of(exe, PROMPT, url, extra)
    }

    /// Runs one turn of `prompt` as the host would.
    fn turn_of(&self, exe: &str, prompt: &str, url: &str, extra: &[(&str, &str)]) -> TurnResult {
        let dir = tempfile::tempdir().unwrap();
        self.turn_in(dir.path(), exe, prompt, url, extra)
    }

    /// Runs one turn of `prompt` with the work area and state dir under `dir` (shared by the
    /// turns of one session).
    fn turn_in(&self, dir: &Path, exe: &str, prompt: &str, url: &str, extra: &[(&str, &str)]) -> TurnResult {
        let (cwd, state) = (dir.join("work"), dir.join("state"));
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd_text = cwd.to_string_lossy().into_owned();
        // Turns of one session differ by their prompt: DSH recalls once per turn number and
        // OpenCode keys its turn on the message id.
        let turn_no = prompt.len();
        let message_id = format!("msg_neg_{turn_no}");
        match self.name {
            "pi" => {
                let payload = json!({"prompt": prompt, "system_prompt": "BASE", "cwd": cwd_text,
                                     "session_id": "neg-session", "branch_roles": ["user"]});
                let out = self
                    .cmd(exe, url, &state, extra)
                    .arg("before-agent-start")
                    .stdin_json(&payload)
                    .run();
                let injected = line_field(&out, "systemPrompt");
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            "hermes" => {
                // Hermes' shell-hook payload: the prompt under `extra`, the session at the top.
                let payload = json!({"hook_event_name": "pre_llm_call", "tool_name": null, "tool_input": null,
                                     "session_id": "neg-session", "cwd": cwd_text,
                                     "extra": {"user_message": prompt, "turn_id": format!("t{turn_no}"),
                                               "is_first_turn": true, "conversation_history": [],
                                               "platform": "cli"}});
                let out = self.cmd(exe, url, &state, extra).stdin_json(&payload).run();
                let injected = line_field(&out, "context");
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            "dsh" => {
                let payload = json!({"session": {"id": "neg-session", "cwd": cwd_text}, "turn": turn_no, "step": 1,
                                     "messages": [{"source": {"kind": "user"}, "content": [{"type": "text", "text": prompt}]}]});
                let out = self
                    .cmd(exe, url, &state, extra)
                    .arg("pre-step")
                    .stdin_json(&payload)
                    .run();
                let injected = line_field(&out, "context");
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            "openclaw" => {
                let payload = json!({"prompt": prompt, "cwd": cwd_text, "session_id": "neg-session",
                                     "history_roles": ["user", "assistant"]});
                let out = self
                    .cmd(exe, url, &state, extra)
                    .arg("before-prompt-build")
                    .stdin_json(&payload)
                    .run();
                let injected = line_field(&out, "prependContext");
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            "opencode" => {
                let prepare = json!({"session_id": "ses_neg", "message_id": message_id, "created_ms": turn_no,
                                     "parts": [{"type": "text", "text": prompt, "synthetic": false}],
                                     "directory": cwd_text});
                // One process per prompt: the part it answers is what the shim appends (to the
                // message it names, which is this one).
                let out = self
                    .cmd(exe, url, &state, extra)
                    .arg("prepare")
                    .stdin_json(&prepare)
                    .run();
                let injected = line_field(&out, "text");
                if injected.is_some() {
                    assert_eq!(
                        line_field(&out, "message_id").as_deref(),
                        Some(message_id.as_str())
                    );
                }
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            "kimi-code" => {
                // Kimi's payload: the prompt as content parts; the answer a `{"message": …}` line.
                let payload = json!({"hook_event_name": "UserPromptSubmit", "session_id": "neg-session",
                                     "cwd": cwd_text, "client_type": "kimi_code_cli", "is_steer": false,
                                     "prompt": [{"type": "text", "text": prompt}]});
                let out = self.cmd(exe, url, &state, extra).stdin_json(&payload).run();
                let injected = line_field(&out, "message");
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            _ if self.command_hook => {
                // The payload names the row's prompt event (`UserPromptSubmit`, `BeforeAgent`).
                let event = self.host.spec().events.prompt;
                let mut payload = prompt_payload(prompt, &cwd);
                payload["hook_event_name"] = json!(event);
                let out = self.cmd(exe, url, &state, extra).stdin_json(&payload).run();
                let injected = if out.status.success() {
                    out.context_for(event)
                } else {
                    None
                };
                TurnResult {
                    outputs: vec![out],
                    injected,
                }
            }
            other => unreachable!("{other}"),
        }
    }

    fn turn(&self, url: &str, extra: &[(&str, &str)]) -> TurnResult {
        self.turn_with(self.exe, url, extra)
    }
}

/// A field of the one JSON line a shim host reads on stdout.
fn line_field(out: &HookOutput, field: &str) -> Option<String> {
    let line = out.stdout.trim_end_matches('\n');
    if line.is_empty() {
        return None;
    }
    assert!(!line.contains('\n'), "one protocol line: {:?}", out.stdout);
    let v: Value = serde_json::from_str(line).expect("protocol line is JSON");
    Some(v[field].as_str().expect("protocol field is text").to_owned())
}

/// A Server that behaves, except that the prepare answer is `prepare()`.
fn server(prepare: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
    FakeServer::builder(SCOPE)
        .prepare(prepare)
        .capture_position(1)
        .answer(
            FLUSH,
            Reply::json(200, &json!({"status": "idle", "current_cursor": 1})),
        )
        .start()
}

#[test]
fn every_host_injects_a_valid_context() {
    // The harness must see injection when there is some, or the negative cases below prove nothing.
    for host in hosts() {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let turn = host.turn(&s.url(), &[]);
        turn.assert_fail_open(host.name);
        let stderr = turn.stderr();
        let injected = turn
            .injected
            .unwrap_or_else(|| panic!("{}: nothing injected: {stderr}", host.name));
        assert!(injected.contains(CONTENT), "{}: {injected}", host.name);
    }
}

#[test]
fn a_prompt_private_as_a_whole_reaches_no_server_on_any_host() {
    for host in hosts() {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let turn = host.turn_of(host.exe, "<private>the deploy notes</private>", &s.url(), &[]);
        turn.assert_fail_open(host.name);
        let stderr = turn.stderr();
        assert!(turn.injected.is_none(), "{}: {stderr}", host.name);
        assert_eq!(s.paths(), Vec::<String>::new(), "{}: {stderr}", host.name);
        assert!(
            stderr.contains("\"detail\":\"private\""),
            "{}: {stderr}",
            host.name
        );
        assert!(!stderr.contains("deploy notes"), "{}: {stderr}", host.name);
    }
}

#[test]
fn no_state_file_of_any_host_holds_the_context_it_injected() {
    // OpenCode prepares and injects in two processes: the context crosses through the shim's
    // memory, never through a file.
    for host in hosts() {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let dir = tempfile::tempdir().unwrap();
        let turn = host.turn_in(dir.path(), host.exe, PROMPT, &s.url(), &[]);
        turn.assert_fail_open(host.name);
        assert!(
            turn.injected.as_ref().is_some_and(|t| t.contains(CONTENT)),
            "{}: {}",
            host.name,
            turn.stderr()
        );
        let mut files = vec![dir.path().join("state")];
        let mut seen = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.is_file() {
                seen += 1;
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(CONTENT),
                    "{}: {} holds the context",
                    host.name,
                    p.display()
                );
            }
        }
        assert!(seen > 0, "{}: the run left no state to inspect", host.name);
    }
}

/// A named misbehaviour and the diagnostic detail it must produce.
type Case = (&'static str, fn() -> Reply, &'static str);

#[test]
fn every_host_rejects_an_unknown_schema_and_oversized_bodies() {
    let replies: [Case; 3] = [
        (
            "schema v2",
            || {
                let mut v = ready("NEGBODY");
                v["schema"] = json!("powercontext.prepared-context.v2");
                Reply::json(200, &v)
            },
            "schema",
        ),
        (
            "oversized, declared",
            || Reply::Oversized {
                status: 200,
                size: 2 << 20,
                declared_length: true,
            },
            "body_too_large",
        ),
        (
            "oversized, streamed",
            || Reply::Oversized {
                status: 200,
                size: 2 << 20,
                declared_length: false,
            },
            "body_too_large",
        ),
    ];
    for host in hosts() {
        for (case, reply, detail) in replies {
            let s = server(reply);
            let turn = host.turn(&s.url(), &[]);
            turn.assert_fail_open(host.name);
            assert_eq!(turn.injected, None, "{} / {case}", host.name);
            let d = turn.recall_outcome();
            assert_eq!(d["outcome"], "invalid_response", "{} / {case}: {d}", host.name);
            assert_eq!(d["detail"], detail, "{} / {case}", host.name);
        }
    }
}

#[test]
fn every_host_reports_auth_failures_distinctly() {
    for host in hosts() {
        for (status, outcome) in [(401, "authentication_failed"), (403, "forbidden")] {
            let s = server(move || {
                Reply::json(
                    status,
                    &json!({"error": {"code": "x", "message": "NEGBODY", "details": null}}),
                )
            });
            let turn = host.turn(&s.url(), &[]);
            turn.assert_fail_open(host.name);
            assert_eq!(turn.injected, None);
            let d = turn.recall_outcome();
            assert_eq!(d["outcome"], outcome, "{}: {d}", host.name);
            assert_eq!(d["http_status"], status);
        }
    }
}

#[test]
fn every_host_refuses_redirects_and_never_forwards_the_token() {
    let target = FaultServer::start(|_| Reply::json(200, &ready(CONTENT)));
    let location = format!("{}/v1/context/prepare", target.url());
    for host in hosts() {
        let location = location.clone();
        let s = server(move || Reply::Redirect {
            status: 307,
            location: location.clone(),
        });
        let turn = host.turn(&s.url(), &[]);
        turn.assert_fail_open(host.name);
        assert_eq!(turn.injected, None, "{}", host.name);
        assert_eq!(turn.recall_outcome()["detail"], "redirect", "{}", host.name);
    }
    assert_eq!(
        target.request_count(),
        0,
        "a redirect target never hears from any host"
    );
}

#[test]
fn every_host_fails_open_fast_when_the_server_is_down() {
    for host in hosts() {
        let turn = host.turn(&closed_port_url(), &[]);
        turn.assert_fail_open(host.name);
        assert_eq!(turn.injected, None);
        assert_eq!(
            turn.recall_outcome()["outcome"],
            "server_unavailable",
            "{}",
            host.name
        );
        for out in &turn.outputs {
            assert!(
                out.elapsed < Duration::from_secs(1),
                "{}: {:?}",
                host.name,
                out.elapsed
            );
        }
    }
}

#[test]
fn every_host_exits_within_its_budget_when_the_server_hangs() {
    let budget = Duration::from_millis(1500);
    let limits = [
        ("POWERCONTEXT_<H>_HTTP_BUDGET_SECONDS", "1.5"),
        ("POWERCONTEXT_<H>_REQUEST_TIMEOUT_SECONDS", "1"),
    ];
    for host in hosts() {
        let s = FaultServer::start(|_| Reply::Hang);
        let turn = host.turn(&s.url(), &limits);
        turn.assert_fail_open(host.name);
        assert_eq!(turn.injected, None);
        assert_eq!(turn.recall_outcome()["outcome"], "timeout", "{}", host.name);
        for out in &turn.outputs {
            assert!(
                out.elapsed <= budget + crate::support::start_slack(),
                "{}: {:?}",
                host.name,
                out.elapsed
            );
        }
    }
}

#[test]
fn every_release_binary_fails_open_on_a_panic() {
    for host in hosts() {
        let exe = release_exe(Path::new(host.exe).file_name().unwrap().to_str().unwrap());
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let turn = host.turn_with(
            exe.to_str().unwrap(),
            &s.url(),
            &[("POWERCONTEXT_HOOKS_FAULT", "panic")],
        );
        turn.assert_fail_open(host.name);
        for out in &turn.outputs {
            assert_eq!(out.stdout, "", "{}", host.name);
            assert_eq!(
                out.outcomes(),
                vec!["internal_error"],
                "{}: {}",
                host.name,
                out.stderr
            );
        }
    }
}

impl HostCase {
    /// The subcommand the host's shim runs for a prompt (none for command hooks).
    fn prompt_args(&self) -> &'static [&'static str] {
        match self.name {
            "pi" => &["before-agent-start"],
            "opencode" => &["prepare"],
            "dsh" => &["pre-step"],
            "openclaw" => &["before-prompt-build"],
            _ => &[],
        }
    }
}

#[test]
fn every_host_refuses_a_config_that_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.toml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    // A FIFO blocks whoever opens it until a writer appears; /dev/zero never ends.
    for config in [fifo.to_str().unwrap(), "/dev/zero"] {
        for host in hosts() {
            let s = server(|| Reply::json(200, &ready(CONTENT)));
            let turn = host.turn(&s.url(), &[("POWERCONTEXT_HOOKS_CONFIG", config)]);
            turn.assert_fail_open(host.name);
            assert_eq!(turn.injected, None, "{} / {config}", host.name);
            let d = turn
                .diagnostics()
                .into_iter()
                .find(|d| d["outcome"] == "config_invalid")
                .unwrap_or_else(|| panic!("{} / {config}: no config_invalid: {}", host.name, turn.stderr()));
            assert_eq!(d["setting"], config, "{}: names the file", host.name);
            assert_eq!(
                s.request_count(),
                0,
                "{} / {config}: no call with a bad config",
                host.name
            );
            for out in &turn.outputs {
                assert!(
                    out.elapsed < Duration::from_secs(3),
                    "{} / {config}: {:?}",
                    host.name,
                    out.elapsed
                );
            }
        }
    }
}

#[test]
fn every_host_refuses_a_socks_proxy_by_name_instead_of_crashing() {
    // A remote https Server takes the standard proxy variables; this build speaks only HTTP(S)
    // CONNECT to a proxy. A SOCKS one is a configuration it cannot honour: named, never a crash,
    // and nothing is sent anywhere (neither around the proxy nor to it).
    let proxy = FaultServer::start(|_| Reply::Close);
    let value = format!("socks5://127.0.0.1:{}", proxy.port());
    for host in hosts() {
        let turn = host.turn("https://192.0.2.1", &[("ALL_PROXY", &value)]);
        turn.assert_fail_open(host.name);
        assert_eq!(turn.injected, None, "{}", host.name);
        let diagnostics = turn.diagnostics();
        assert!(
            diagnostics.iter().all(|d| d["outcome"] != "internal_error"),
            "{}: {}",
            host.name,
            turn.stderr()
        );
        let d = diagnostics
            .iter()
            .find(|d| d["outcome"] == "config_invalid")
            .unwrap_or_else(|| panic!("{}: no config_invalid: {}", host.name, turn.stderr()));
        assert_eq!(d["setting"], "ALL_PROXY", "{}", host.name);
    }
    assert_eq!(proxy.request_count(), 0, "the proxy never hears from any host");
}

#[test]
fn every_host_treats_an_invisible_prompt_as_blank() {
    for prompt in ["\u{200B}", "\u{FEFF}\u{200B} \u{2060}\n\u{200D}\t"] {
        for host in hosts() {
            let s = server(|| Reply::json(200, &ready(CONTENT)));
            let turn = host.turn_of(host.exe, prompt, &s.url(), &[]);
            turn.assert_fail_open(host.name);
            assert_eq!(turn.injected, None, "{}", host.name);
            assert!(
                turn.diagnostics().iter().any(|d| d["detail"] == "blank_prompt"),
                "{}: {}",
                host.name,
                turn.stderr()
            );
            assert_eq!(
                s.request_count(),
                0,
                "{}: neither recalled nor captured",
                host.name
            );
        }
    }
}

#[test]
fn every_host_ends_at_its_budget_with_a_timeout_line_when_stdin_never_closes() {
    for host in hosts() {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let dir = tempfile::tempdir().unwrap();
        let out = host
            .cmd(
                host.exe,
                &s.url(),
                dir.path(),
                &[("POWERCONTEXT_<H>_HTTP_BUDGET_SECONDS", "1")],
            )
            .args(host.prompt_args())
            .stdin_bytes(b"{\"prompt\":".to_vec())
            .run_with_stdin_open();
        assert!(out.status.success(), "{}: {:?}", host.name, out.status);
        assert_eq!(out.stdout, "", "{}", host.name);
        // DSH reads stdin before its configuration, so the default budget (4 s) holds it.
        assert!(
            out.elapsed < Duration::from_secs(6),
            "{}: {:?}",
            host.name,
            out.elapsed
        );
        let d = out
            .diagnostic("timeout")
            .unwrap_or_else(|| panic!("{}: no timeout line: {}", host.name, out.stderr));
        assert_eq!(
            d["event"], "payload",
            "{}: names the interrupted stage",
            host.name
        );
        assert_eq!(d["detail"], "watchdog", "{}", host.name);
    }
}

#[test]
fn pi_ends_at_its_budget_when_the_host_does_not_read_a_large_answer() {
    let host = hosts()[3];
    assert_eq!(host.name, "pi");
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let dir = tempfile::tempdir().unwrap();
    // Far more than a pipe holds, even grown to the 1 MiB the hook grows it to: the answer
    // repeats the system prompt, and nobody reads it until the process has exited.
    let payload = json!({"prompt": PROMPT, "system_prompt": "S".repeat(1_200_000), "cwd": dir.path(),
                         "session_id": "neg-session", "branch_roles": ["user"]});
    let out = host
        .cmd(
            host.exe,
            &s.url(),
            dir.path(),
            &[("POWERCONTEXT_<H>_HTTP_BUDGET_SECONDS", "1")],
        )
        .arg("before-agent-start")
        .stdin_json(&payload)
        .run();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    let d = out
        .diagnostic("timeout")
        .unwrap_or_else(|| panic!("no timeout line: {}", out.stderr));
    assert_eq!(d["detail"], "watchdog");
}

/// A bootstrap package in the exact v1 shape, for `scope`.
fn bootstrap_ready(text: &str) -> Value {
    json!({"schema": "powercontext.bootstrap-context.v1", "status": "ready", "reason": null,
           "profile": "powercontext.scope-bootstrap.v1", "content": text, "content_bytes": text.len(),
           "package_digest": format!("sha256:{}", "a".repeat(64)),
           "items": [{"kind": "atomic-memory", "scope_id": SCOPE,
                      "artifact": {"family": "atomic-memory", "artifact_id": "art_neg", "revision": 1},
                      "content_digest": format!("sha256:{}", "b".repeat(64)), "truncated": false}],
           "truncated": false, "receipt": {"receipt_id": "bcr_neg", "state": "pending"}})
}

/// A Server whose prepare works and whose bootstrap answers `bootstrap()`.
fn bootstrap_server(bootstrap: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
    FakeServer::builder(SCOPE)
        .ready(CONTENT)
        .route(BOOTSTRAP, move |_| bootstrap())
        .answer(
            "/v1/context/bootstrap/receipts",
            Reply::json(200, &json!({"receipt_id": "bcr_neg", "state": "injected"})),
        )
        .capture_position(1)
        .start()
}

impl HostCase {
    /// The session's start as the host signals it: a command-hook host whose row has a
    /// session-start event runs that hook; the others bootstrap at the session's first prompt.
    fn session_start(&self, url: &str, extra: &[(&str, &str)]) -> TurnResult {
        let Some(event) = self
            .host
            .spec()
            .events
            .session_start
            .filter(|_| self.command_hook)
        else {
            return self.turn(url, extra);
        };
        let dir = tempfile::tempdir().unwrap();
        let payload = json!({"hook_event_name": event, "session_id": "neg-session",
                             "cwd": dir.path(), "source": "startup"});
        let out = self
            .cmd(self.exe, url, &dir.path().join("state"), extra)
            .stdin_json(&payload)
            .run();
        let injected = if out.status.success() {
            serde_json::from_str::<Value>(out.stdout.trim())
                .ok()
                .and_then(|v| {
                    if let Some(top) = v.get("additionalContext") {
                        return top.as_str().map(str::to_owned);
                    }
                    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event);
                    v["hookSpecificOutput"]["additionalContext"]
                        .as_str()
                        .map(str::to_owned)
                })
        } else {
            None
        };
        TurnResult {
            outputs: vec![out],
            injected,
        }
    }

    fn bootstrap_outcome(turn: &TurnResult) -> Value {
        turn.diagnostics()
            .into_iter()
            .find(|d| d["event"] == "context_bootstrap")
            .unwrap_or_else(|| panic!("no bootstrap diagnostic: {}", turn.stderr()))
    }
}

#[test]
fn every_host_bootstraps_a_session_with_a_valid_package() {
    for host in hosts() {
        let s = bootstrap_server(|| Reply::json(200, &bootstrap_ready("NEGBOOT curated rule")));
        let turn = host.session_start(&s.url(), &[]);
        turn.assert_fail_open(host.name);
        let injected = turn
            .injected
            .clone()
            .unwrap_or_else(|| panic!("{}: nothing injected: {}", host.name, turn.stderr()));
        assert!(
            injected.contains("NEGBOOT curated rule"),
            "{}: {injected}",
            host.name
        );
        let receipts = s.bodies("/v1/context/bootstrap/receipts");
        assert_eq!(receipts.len(), 1, "{}: one receipt", host.name);
        assert_eq!(receipts[0]["outcome"], "injected", "{}", host.name);
        assert_eq!(receipts[0]["receipt_id"], "bcr_neg", "{}", host.name);
    }
}

#[test]
fn every_host_fails_open_when_the_bootstrap_misbehaves() {
    let target = FaultServer::start(|_| Reply::json(200, &bootstrap_ready("NEGBOOT")));
    let location = format!("{}/v1/context/bootstrap", target.url());
    type Fault = Box<dyn Fn() -> Reply + Send + Sync>;
    let cases: Vec<(&str, Fault, &str, Option<&str>)> = vec![
        (
            "schema v2",
            Box::new(|| {
                let mut v = bootstrap_ready("NEGBODY");
                v["schema"] = json!("powercontext.bootstrap-context.v2");
                Reply::json(200, &v)
            }),
            "invalid_response",
            Some("schema"),
        ),
        (
            "oversized",
            Box::new(|| Reply::Oversized {
                status: 200,
                size: 2 << 20,
                declared_length: false,
            }),
            "invalid_response",
            Some("body_too_large"),
        ),
        (
            "redirect",
            Box::new(move || Reply::Redirect {
                status: 307,
                location: location.clone(),
            }),
            "invalid_response",
            Some("redirect"),
        ),
        (
            "401",
            Box::new(|| {
                Reply::json(
                    401,
                    &json!({"error": {"code": "x", "message": "NEGBODY", "details": null}}),
                )
            }),
            "authentication_failed",
            None,
        ),
        (
            "403",
            Box::new(|| {
                Reply::json(
                    403,
                    &json!({"error": {"code": "x", "message": "NEGBODY", "details": null}}),
                )
            }),
            "forbidden",
            None,
        ),
        (
            "503",
            Box::new(|| {
                Reply::json(
                    503,
                    &json!({"error": {"code": "x", "message": "NEGBODY", "details": null}}),
                )
            }),
            "server_unavailable",
            None,
        ),
        ("hang", Box::new(|| Reply::Hang), "timeout", None),
    ];
    let limits = [
        ("POWERCONTEXT_<H>_HTTP_BUDGET_SECONDS", "1.5"),
        ("POWERCONTEXT_<H>_REQUEST_TIMEOUT_SECONDS", "1"),
    ];
    let cases = std::sync::Arc::new(cases);
    for host in hosts() {
        for i in 0..cases.len() {
            let shared = std::sync::Arc::clone(&cases);
            let (case, _, outcome, detail) = &cases[i];
            let s = bootstrap_server(move || (shared[i].1)());
            let turn = host.session_start(&s.url(), &limits);
            turn.assert_fail_open(host.name);
            let d = HostCase::bootstrap_outcome(&turn);
            assert_eq!(d["outcome"], *outcome, "{} / {case}: {d}", host.name);
            if let Some(detail) = detail {
                assert_eq!(d["detail"], *detail, "{} / {case}", host.name);
            }
            // The prompt's own recall is unaffected; a session start injects nothing.
            match host.name {
                _ if host.host.spec().events.session_start.is_some() => {
                    assert_eq!(turn.injected, None, "{} / {case}", host.name);
                }
                _ => {
                    let injected = turn.injected.clone().unwrap_or_default();
                    assert!(injected.contains(CONTENT), "{} / {case}: {injected}", host.name);
                    assert!(!injected.contains("NEGBOOT"), "{} / {case}", host.name);
                }
            }
            for out in &turn.outputs {
                assert!(
                    out.elapsed <= Duration::from_millis(1500) + crate::support::start_slack(),
                    "{} / {case}: {:?}",
                    host.name,
                    out.elapsed
                );
            }
        }
    }
    assert_eq!(
        target.request_count(),
        0,
        "a redirect target never hears from any host"
    );
}

#[test]
fn a_recalled_item_is_injected_once_per_window_where_injections_persist() {
    // The Server's envelope, with one cited item.
    let cited = format!(
        "Policy.\n\nBEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n{}\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1",
        json!({"trust": "untrusted_history", "items": [{"citation": {"artifact_ref":
               {"family": "atomic-memory", "artifact_id": "art_neg", "revision": 1}},
               "content": CONTENT, "truncated": false, "kind": "atomic-memory"}]})
    );
    for host in hosts() {
        let body = cited.clone();
        let s = server(move || Reply::json(200, &ready(&body)));
        let dir = tempfile::tempdir().unwrap();
        let first = host.turn_in(dir.path(), host.exe, PROMPT, &s.url(), &[]);
        first.assert_fail_open(host.name);
        assert!(
            first.injected.as_deref().is_some_and(|t| t.contains(CONTENT)),
            "{}",
            host.name
        );
        let again = format!("{PROMPT} Once more.");
        let second = host.turn_in(dir.path(), host.exe, &again, &s.url(), &[]);
        second.assert_fail_open(host.name);
        match host.name {
            // Their hook context and plugin messages stay in the conversation.
            _ if host.persists => {
                assert_eq!(second.injected, None, "{}: injected twice", host.name);
                assert!(
                    second
                        .diagnostics()
                        .iter()
                        .any(|d| d["detail"] == "already_injected"),
                    "{}: {}",
                    host.name,
                    second.stderr()
                );
            }
            // Pi's system prompt and OpenCode's transform last one turn, and Gemini CLI does not
            // replay a turn's hook context on resume: every turn carries it.
            _ => assert!(
                second.injected.as_deref().is_some_and(|t| t.contains(CONTENT)),
                "{}: the second turn lost its context",
                host.name
            ),
        }
    }
}

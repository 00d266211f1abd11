//! The session-memory section of `make bench`: the bytes a Claude Code session gets injected, turn
//! by turn, over ten prompts on one topic against the real Server — without the session window
//! and bootstrap (`POWERCONTEXT_CLAUDE_BOOTSTRAP=0` and a new session id per prompt: every prompt
//! injects its whole recall, as before sessions were kept) and with them (one session: the
//! `SessionStart` package, then prompts that leave out what the session already has). It drives
//! the release hook executable with the recorded payload shapes, counts bytes and never times them,
//! and talks to nothing but the loopback Server.

use std::fmt::Write as _;
use std::process::Command;

use powercontext_hooks_test_support::real_server::{RealServer, ServerOptions};
use serde_json::{Value, json};

use crate::Ctx;
use crate::hosts::{self, Payload};
use crate::measure::Invocation;

/// Six ready memories on one topic; the first [`PINNED`] are curated (`bootstrap-context`).
const MEMORIES: [&str; 6] = [
    "Team rule: every kestrel pipeline release names a rollback owner in its release note.",
    "Team rule: kestrel pipeline deploys are frozen on Fridays after 14:00 UTC.",
    "Decision: the kestrel pipeline deploys the billing service with the blue-green script.",
    "Decision: rolling back a kestrel pipeline deploy uses scripts/rollback-kestrel.",
    "The kestrel pipeline's canary stage runs for 20 minutes before the full rollout.",
    "The kestrel pipeline publishes its deploy logs to the kestrel-audit bucket.",
];
const PINNED: usize = 2;

/// Ten prompts of one session on that topic.
const PROMPTS: [&str; 10] = [
    "What does the kestrel pipeline deploy?",
    "How do I roll back a kestrel pipeline deploy?",
    "How long does the kestrel canary stage run?",
    "Where do the kestrel pipeline deploy logs go?",
    "Which script does the kestrel pipeline use to deploy billing?",
    "Can I run a kestrel pipeline deploy on Friday afternoon?",
    "Who has to be named in a kestrel release note?",
    "Walk me through a kestrel pipeline deploy from canary to rollout.",
    "What should I check before rolling back the kestrel pipeline?",
    "Summarise how the kestrel pipeline deploys and rolls back.",
];

/// Injected bytes: the session start, then each prompt.
pub struct Figures {
    pub before: Vec<usize>,
    pub after: Vec<usize>,
}

impl Figures {
    fn total(v: &[usize]) -> usize {
        v.iter().sum()
    }

    /// The table, for the terminal and `docs/benchmarks.md`.
    pub fn markdown(&self) -> String {
        let mut s =
            String::from("| Turn | before: bytes injected | after: bytes injected |\n|---|---:|---:|\n");
        for (i, (b, a)) in self.before.iter().zip(&self.after).enumerate() {
            let turn = if i == 0 {
                "session start".to_owned()
            } else {
                i.to_string()
            };
            let _ = writeln!(s, "| {turn} | {b} | {a} |");
        }
        let (b, a) = (Self::total(&self.before), Self::total(&self.after));
        let _ = writeln!(
            s,
            "| **total** | **{b}** | **{a}** ({:.0} % of before) |",
            a as f64 * 100.0 / b.max(1) as f64
        );
        s
    }

    pub fn json(&self) -> Value {
        json!({
            "turns": PROMPTS.len(),
            "memories": MEMORIES.len(),
            "curated": PINNED,
            "before_bytes": self.before,
            "after_bytes": self.after,
            "before_total": Self::total(&self.before),
            "after_total": Self::total(&self.after),
        })
    }
}

/// The `additionalContext` a hook run answered with, in bytes (0 for no answer).
fn injected_bytes(stdout: &str) -> usize {
    stdout
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| {
            v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .map(str::len)
        })
        .unwrap_or(0)
}

/// Tags `artifact` `bootstrap-context` with the CLI, as a user would.
fn pin(server: &RealServer, scope: &str, artifact: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_powercontext-hooks"))
        .args(["pin", artifact, "--scope", scope, "--host", "claude-code"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", server.home())
        .env("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml")
        .env("POWERCONTEXT_CLAUDE_SERVER_URL", server.url())
        .output()
        .expect("run powercontext-hooks pin");
    assert!(
        out.status.success(),
        "pin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn measure(ctx: &Ctx) -> Figures {
    crate::say("session memory: bytes injected per turn, before and after (real Server)…");
    let server = RealServer::start(ServerOptions::default());
    let scope = server.create_scope("bench-session-memory");
    for (i, text) in MEMORIES.iter().enumerate() {
        let artifact = server.remember_artifact(&scope, text);
        if i < PINNED {
            pin(&server, &scope, &artifact);
        }
    }
    let host = &hosts::ALL[0];
    assert_eq!(host.name, "claude-code");
    let url = server.url();
    let setup = |inv: Invocation, state: &str, bootstrap: bool| {
        let mut inv = inv
            .env("POWERCONTEXT_CLAUDE_SERVER_URL", url.clone())
            .env("POWERCONTEXT_CLAUDE_SCOPE_ID", scope.clone())
            .env("POWERCONTEXT_CLAUDE_CAPTURE_PROMPTS", "0")
            .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "8")
            .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "20")
            .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
            .env("POWERCONTEXT_CLAUDE_BOOTSTRAP", if bootstrap { "1" } else { "0" });
        for (k, v) in ctx.base_env(state) {
            inv = inv.env(&k, v);
        }
        let out = inv.run();
        assert!(out.success, "hook failed: {}", out.stderr);
        injected_bytes(&out.stdout)
    };
    let start = |session: &str, state: &str, bootstrap: bool| {
        let payload = json!({
            "session_id": session,
            "transcript_path": ctx.project.join("transcript.jsonl"),
            "cwd": ctx.project,
            "hook_event_name": "SessionStart",
            "source": "startup",
        });
        let inv = Invocation::new(Ctx::exe(host.exe), &ctx.project)
            .stdin(serde_json::to_vec(&payload).expect("payload"));
        setup(inv, state, bootstrap)
    };
    let prompt = |session: &str, run: usize, state: &str, bootstrap: bool| {
        let p = Payload {
            prompt: PROMPTS[run],
            cwd: &ctx.project,
            run,
            session: Some(session),
        };
        let inv = Invocation::new(Ctx::exe(host.exe), &ctx.project).stdin((host.payload)(&ctx.fixtures, &p));
        setup(inv, state, bootstrap)
    };

    // Before: no bootstrap, and every prompt in a session of its own (nothing is remembered).
    let mut before = vec![start("bench-before-0", "session-before", false)];
    for run in 0..PROMPTS.len() {
        before.push(prompt(
            &format!("bench-before-{run}"),
            run,
            "session-before",
            false,
        ));
    }
    // After: one session, as Claude Code runs it.
    let mut after = vec![start("bench-after", "session-after", true)];
    for run in 0..PROMPTS.len() {
        after.push(prompt("bench-after", run, "session-after", true));
    }
    assert!(after[0] > 0, "the curated memories made a session-start package");
    Figures { before, after }
}

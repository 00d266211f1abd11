//! The prompt path against the real pinned Server with a ready memory: our Claude Code hook (scope
//! cache warm, and off) next to the Server's own `prepare_context` duration from its access log in
//! the same runs, and the official Python Claude Code hook when its scripts are given; then a burst
//! of 32 prompts from parallel sessions, each delivered exactly once. Owns no timing primitive
//! (see `measure`) and never commits or copies the official scripts: it runs them where the
//! developer put them ([`OFFICIAL_VAR`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::endpoint::BaseUrl;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::lock;
use powercontext_hooks_core::recall;
use powercontext_hooks_test_support::real_server::{RealServer, ServerOptions};
use serde_json::{Value, json};

use crate::hosts::{self, Payload};
use crate::measure::{Invocation, RunOut, Stats, round3};
use crate::report::{Report, Row, Section, Target};
use crate::{Ctx, PROMPT, say};

/// The root of the official Claude Code plugin (the directory holding `hooks/user_prompt_submit.py`,
/// `claude_code_settings.py` and `scripts/`), or its `hooks` directory. Not in the PyPI wheel:
/// take it from a checkout of the upstream repository (`integrations/claude-code/plugins/powercontext`).
pub const OFFICIAL_VAR: &str = "POWERCONTEXT_OFFICIAL_HOOKS";

/// Prompts of the burst, started together from parallel sessions.
pub const BURST: usize = 32;

/// The official plugin root named by [`OFFICIAL_VAR`], if it holds the hook script.
fn official_root(ctx: &Ctx) -> Option<PathBuf> {
    let given = PathBuf::from(ctx.official_hooks.as_deref()?);
    [
        given.clone(),
        given.parent().map(Path::to_path_buf).unwrap_or_default(),
    ]
    .into_iter()
    .find(|root| root.join("hooks/user_prompt_submit.py").is_file())
}

/// `operation → durations (ms)` of the access-log lines in `log`.
fn server_ops(log: &str) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in log.lines().filter(|l| l.contains("transport.request.completed")) {
        let field = |name: &str| {
            let at = line.find(&format!(" {name}="))? + name.len() + 2;
            let rest = &line[at..];
            let value = rest
                .strip_prefix('"')
                .map_or_else(|| rest.split(' ').next(), |quoted| quoted.split('"').next())?;
            Some(value.to_owned())
        };
        if let (Some(op), Some(ms)) = (
            field("operation"),
            field("duration_ms").and_then(|v| v.parse().ok()),
        ) {
            out.entry(op).or_default().push(ms);
        }
    }
    out
}

fn millis(v: &[f64]) -> Vec<Duration> {
    v.iter().map(|ms| Duration::from_secs_f64(ms / 1000.0)).collect()
}

/// Waits (untimed) until no capture waits in `state`'s spool and no drainer holds its lock, so
/// one row's background delivery never loads the next row's prompt.
pub(crate) fn quiesce(state: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let waiting = std::fs::read_dir(state.join("spool"))
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(".json"))
            })
            .unwrap_or(false);
        let drainer = matches!(
            lock::try_acquire(&state.join("drain.lock")),
            Err(lock::LockError::Busy)
        );
        if !waiting && !drainer {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    say("WARNING: the drainer did not finish within 30 s");
}

/// Empties the session records of `state` (untimed): each run then recalls as a session's first
/// prompt does. Left alone, the same prompt in the same session injects nothing after the first
/// run (`already_injected`), for the same Server work.
pub(crate) fn fresh_window(state: &Path) {
    if let Ok(d) = std::fs::read_dir(state.join("sessions")) {
        for e in d.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// After a run's capture has landed, the Server may still be busy with it for a moment; no row
/// should pay for another's.
const SETTLE: Duration = Duration::from_millis(100);

struct PathCase<'a> {
    id: &'static str,
    label: String,
    /// The state directory name our hook runs with (the official hook keeps none).
    state: Option<&'static str>,
    make: Box<dyn Fn(usize) -> Invocation + 'a>,
    walls: Vec<Duration>,
    prepare: Vec<f64>,
    ops: BTreeMap<String, Vec<f64>>,
    failed: usize,
    first_failure: Option<String>,
}

impl<'a> PathCase<'a> {
    fn new(
        id: &'static str,
        label: String,
        state: Option<&'static str>,
        make: impl Fn(usize) -> Invocation + 'a,
    ) -> Self {
        Self {
            id,
            label,
            state,
            make: Box::new(make),
            walls: Vec::new(),
            prepare: Vec::new(),
            ops: BTreeMap::new(),
            failed: 0,
            first_failure: None,
        }
    }
}

/// Figures the targets quote.
pub struct PathFigures {
    pub ours_p50: f64,
    pub ours_prepare_p50: f64,
    pub official_p50: Option<f64>,
}

fn ok(o: &RunOut) -> bool {
    o.success && o.stdout.contains("rollback-kestrel")
}

#[allow(
    clippy::too_many_lines,
    reason = "one section: its rows, its checks and its notes"
)]
pub fn bench_prompt_path(ctx: &Ctx, report: &mut Report) -> PathFigures {
    say("prompt path against the real PowerContext Server (pinned)…");
    let server = RealServer::start(ServerOptions::default());
    let scope = server.create_scope("bench-prompt-path");
    server.remember(
        &scope,
        "Decision: the kestrel pipeline deploys the billing service with the blue-green script; \
         rollback uses scripts/rollback-kestrel.",
    );
    let session = "bench-prompt-path";
    server.bind("claude-code", "session", session, &scope);
    let url = server.url();
    let host = &hosts::ALL[0];
    assert_eq!(host.name, "claude-code");
    let official = official_root(ctx);

    let ours = |state: &'static str, cache: Option<&'static str>| {
        let url = url.clone();
        move |run: usize| {
            let p = Payload {
                prompt: PROMPT,
                cwd: &ctx.project,
                run,
                session: Some(session),
            };
            let inv = ctx.hook(host, &url, state, &p);
            match cache {
                Some(v) => inv.env("POWERCONTEXT_HOOKS_SCOPE_CACHE_SECONDS", v),
                None => inv,
            }
        }
    };
    let mut cases = vec![
        PathCase::new(
            "path.ours",
            format!(
                "`{}` (defaults: scope cache on, capture after the answer)",
                host.exe
            ),
            Some("path-ours"),
            ours("path-ours", None),
        ),
        PathCase::new(
            "path.ours.nocache",
            format!("`{}`, scope cache off (resolve, then prepare)", host.exe),
            Some("path-ours-nocache"),
            ours("path-ours-nocache", Some("0")),
        ),
    ];
    match &official {
        Some(root) => {
            let script = root.join("hooks/user_prompt_submit.py");
            let url = url.clone();
            let scope = scope.clone();
            cases.push(PathCase::new(
                "path.official",
                "official Python hook (`user_prompt_submit.py`, upstream plugin)".to_owned(),
                None,
                move |run| {
                    let p = Payload {
                        prompt: PROMPT,
                        cwd: &ctx.project,
                        run,
                        session: Some(session),
                    };
                    let mut inv = Invocation::new(&ctx.python, &ctx.project)
                        .arg(&script.to_string_lossy())
                        .stdin((host.payload)(&ctx.fixtures, &p))
                        .env("POWERCONTEXT_CLAUDE_SERVER_URL", url.clone())
                        // The upstream hook derives a client-side scope unless one is configured
                        // (it never asks the resolve route): configured, it makes no extra call.
                        .env("POWERCONTEXT_CLAUDE_SCOPE_ID", scope.clone());
                    for (k, v) in ctx.base_env("path-official") {
                        inv = inv.env(&k, v);
                    }
                    inv
                },
            ));
        }
        None => say(&format!(
            "skipping the official hook column: set {OFFICIAL_VAR} to the upstream Claude Code plugin \
             directory (integrations/claude-code/plugins/powercontext of a checkout of the upstream \
             repository; its scripts are not in the PyPI wheel)"
        )),
    }

    let runs = ctx.plan.real_runs;
    let warmup = 3;
    let started = Instant::now();
    for i in 0..warmup + runs {
        for c in &mut cases {
            if let Some(st) = c.state {
                quiesce(&ctx.state_dir(st));
                fresh_window(&ctx.state_dir(st));
            }
            std::thread::sleep(SETTLE);
            let before = server.log().len();
            let out = (c.make)(i);
            let out = out.run();
            // Its capture is delivered after the answer: let it land before the next row runs.
            if let Some(st) = c.state {
                quiesce(&ctx.state_dir(st));
            }
            std::thread::sleep(SETTLE);
            let log = server.log();
            let ops = server_ops(log.get(before..).unwrap_or_default());
            if !ok(&out) {
                c.failed += 1;
                if c.first_failure.is_none() {
                    c.first_failure = Some(format!(
                        "exit ok: {}, stdout {} bytes, stderr: {}",
                        out.success,
                        out.stdout.len(),
                        out.stderr.trim()
                    ));
                }
            }
            if i < warmup {
                continue;
            }
            c.walls.push(out.wall);
            if let Some(ms) = ops.get("prepare_context").and_then(|v| v.first()) {
                c.prepare.push(*ms);
            }
            for (op, v) in ops {
                c.ops.entry(op).or_default().extend(v);
            }
        }
    }
    say(&format!(
        "prompt path: {} rows × {runs} runs in {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    ));

    let mut rows = Vec::new();
    let mut figures = PathFigures {
        ours_p50: 0.0,
        ours_prepare_p50: 0.0,
        official_p50: None,
    };
    let ours_p50 = Stats::of(&cases[0].walls).p50;
    for c in &cases {
        if c.failed > 0 {
            say(&format!(
                "WARNING {}: CHECK FAILED in {} runs (first: {})",
                c.id,
                c.failed,
                c.first_failure.as_deref().unwrap_or("")
            ));
        }
        let st = Stats::of(&c.walls);
        let prep = (!c.prepare.is_empty()).then(|| Stats::of(&millis(&c.prepare)));
        let per_run: BTreeMap<&str, Value> = c
            .ops
            .iter()
            .map(|(op, v)| {
                let s = Stats::of(&millis(v));
                (
                    op.as_str(),
                    json!({"per_run": round3(v.len() as f64 / c.walls.len() as f64), "p50_ms": round3(s.p50), "mean_ms": round3(s.mean)}),
                )
            })
            .collect();
        let mut note = match prep {
            Some(p) => format!(
                "Server's prepare p50 {:.1} ms, p95 {:.1} ms: hook − prepare = {:+.1} ms at p50",
                p.p50,
                p.p95,
                st.p50 - p.p50
            ),
            None => String::new(),
        };
        if c.id != "path.ours" {
            note.push_str(&format!("; {:.2}× ours", st.p50 / ours_p50));
        }
        let calls: Vec<String> = c
            .ops
            .iter()
            .map(|(op, v)| format!("{op} ×{:.1}", v.len() as f64 / c.walls.len() as f64))
            .collect();
        note.push_str(&format!("; Server calls per prompt: {}", calls.join(", ")));
        if c.failed > 0 {
            note.push_str(&format!("; CHECK FAILED in {} runs", c.failed));
        }
        match c.id {
            "path.ours" => {
                figures.ours_p50 = st.p50;
                figures.ours_prepare_p50 = prep.map_or(0.0, |p| p.p50);
            }
            "path.official" => figures.official_p50 = Some(st.p50),
            _ => {}
        }
        rows.push(Row {
            id: c.id.into(),
            label: c.label.clone(),
            stats: st,
            extra: json!({
                "check_failures": c.failed,
                "server_prepare": prep.map(Stats::to_json),
                "server_operations": per_run,
            }),
            note,
        });
    }
    // The same prepare in-process through the hooks' own transport: what a round trip costs
    // beyond the Server's logged duration (HTTP framing on both sides, the event loop, loopback),
    // so the hook's own share of its distance to the prepare time can be told apart.
    let base = BaseUrl::parse(&url).expect("server url");
    let no_env = Env::from_pairs(Vec::<(String, String)>::new());
    let mut trips = Vec::new();
    let mut trip_prepare = Vec::new();
    for i in 0..runs + warmup {
        std::thread::sleep(SETTLE);
        let before = server.log().len();
        let t = Transport::new(
            base.clone(),
            None,
            Duration::from_secs(5),
            Deadline::after(Duration::from_secs(10)),
            &no_env,
        )
        .expect("transport");
        let start = Instant::now();
        let _ = recall::prepare(&t, &scope, PROMPT, 8000).expect("prepare against the real Server");
        let took = start.elapsed();
        std::thread::sleep(Duration::from_millis(5));
        let log = server.log();
        let ops = server_ops(log.get(before..).unwrap_or_default());
        if i < warmup {
            continue;
        }
        trips.push(took);
        if let Some(ms) = ops.get("prepare_context").and_then(|v| v.first()) {
            trip_prepare.push(*ms);
        }
    }
    let trip = Stats::of(&trips);
    let trip_server = Stats::of(&millis(&trip_prepare));
    rows.push(Row {
        id: "path.direct".into(),
        label: "in-process: one prepare round trip through the hooks' transport (no process)".into(),
        stats: trip,
        extra: json!({"server_prepare": trip_server.to_json()}),
        note: format!(
            "Server's prepare p50 {:.1} ms: round trip − prepare = {:+.1} ms at p50 (HTTP and event loop \
             outside the Server's own measure); the hook adds {:+.1} ms to the round trip",
            trip_server.p50,
            trip.p50 - trip_server.p50,
            figures.ours_p50 - trip.p50
        ),
    });
    let official_note = if official.is_some() {
        String::new()
    } else {
        format!(
            " The official hook's column was skipped: `{OFFICIAL_VAR}` was not set (see the method notes)."
        )
    };
    report.sections.push(Section {
        title: "Prompt path against the real Server: one round trip".into(),
        intro: format!(
            "The Server from `.venv-server` on loopback, the session bound to a scope holding a remembered \
             decision the prompt recalls; a new turn id each run, so every capture is a new Source. Each row's \
             hook wall time (spawn → exit) sits next to the Server's own `prepare_context` duration for the \
             same runs, read from its access log (`transport.request.completed`, `duration_ms`). Between \
             runs the bench waits, untimed, until the drainer has delivered the previous capture and then \
             100 ms more, so no row is slowed by another's background work, and empties the session's \
             injection window (else the same prompt injects nothing after the first run: already injected, \
             for the same Server work). The Server calls per prompt include the drainer's: with the scope \
             cache warm the hook's only request is the prepare, and the drainer resolves the capture's \
             scope afresh. The official hook is given the scope id (it never asks the resolve route; \
             unconfigured, it derives a client-side scope that does not exist on this Server).{official_note}"
        ),
        rows,
    });
    let goal_met = figures.ours_p50 <= figures.ours_prepare_p50 + 3.0;
    report.targets.push(Target {
        name: "prompt path ≈ one prepare".into(),
        goal: "our Claude Code hook p50 ≤ the Server's prepare p50 + 3 ms (same run)".into(),
        measured: format!(
            "{:.1} ms vs prepare {:.1} ms ({:+.1} ms)",
            figures.ours_p50,
            figures.ours_prepare_p50,
            figures.ours_p50 - figures.ours_prepare_p50
        ),
        met: Some(goal_met),
    });
    report.targets.push(Target {
        name: "vs the official Claude Code hook".into(),
        goal: "≥ 3× faster at p50 (same run)".into(),
        measured: figures.official_p50.map_or_else(
            || format!("not measured ({OFFICIAL_VAR} not set)"),
            |o| {
                format!(
                    "{:.2}× ({o:.1} ms vs {:.1} ms)",
                    o / figures.ours_p50,
                    figures.ours_p50
                )
            },
        ),
        met: figures.official_p50.map(|o| o / figures.ours_p50 >= 3.0),
    });
    report.headline.push(format!(
        "Against the real Server 1.4.1, our Claude Code hook answers in {:.1} ms at p50, {:+.1} ms from the \
         Server's own prepare time ({:.1} ms){}.",
        figures.ours_p50,
        figures.ours_p50 - figures.ours_prepare_p50,
        figures.ours_prepare_p50,
        figures.official_p50.map_or_else(String::new, |o| format!(
            "; the official Python hook takes {o:.1} ms ({:.2}×)",
            o / figures.ours_p50
        ))
    ));

    bench_real_burst(ctx, &server, report);
    figures
}

/// 32 prompts at once from parallel sessions, against the same Server: each hook's wall time,
/// the budget it must stay within, and each prompt delivered exactly once.
fn bench_real_burst(ctx: &Ctx, server: &RealServer, report: &mut Report) {
    say(&format!("{BURST} parallel sessions against the real Server…"));
    let host = &hosts::ALL[0];
    let scope = server.create_scope("bench-burst");
    server.remember(
        &scope,
        "Decision: the kestrel pipeline deploys the billing service with the blue-green script; \
         rollback uses scripts/rollback-kestrel.",
    );
    let sessions: Vec<String> = (0..BURST).map(|i| format!("bench-burst-{i}")).collect();
    for s in &sessions {
        server.bind("claude-code", "session", s, &scope);
    }
    let url = server.url();
    let budget = Duration::from_secs(4);
    let rounds = ctx.plan.burst_rounds.min(5);
    let mut walls = Vec::new();
    let mut injected = 0usize;
    let mut prompts = Vec::new();
    let mut over_budget = 0usize;
    let state = ctx.state_dir("path-burst");
    for round in 0..=rounds {
        fresh_window(&state);
        std::thread::sleep(SETTLE);
        let round_prompts: Vec<String> = (0..BURST)
            .map(|i| format!("{PROMPT} (burst {round}.{i})"))
            .collect();
        let invs: Vec<Invocation> = round_prompts
            .iter()
            .zip(&sessions)
            .map(|(prompt, session)| {
                let p = Payload {
                    prompt,
                    cwd: &ctx.project,
                    run: round,
                    session: Some(session),
                };
                ctx.hook(host, &url, "path-burst", &p)
            })
            .collect();
        let outs = crate::run_together(&invs);
        quiesce(&state);
        // Round 0 warms the Server and the page cache; its prompts are still checked.
        prompts.extend(round_prompts);
        if round == 0 {
            continue;
        }
        for o in outs {
            injected += usize::from(ok(&o));
            over_budget += usize::from(!o.success || o.wall > budget + Duration::from_millis(200));
            walls.push(o.wall);
        }
    }
    let sources = server.sources(&scope);
    let once = prompts
        .iter()
        .filter(|p| sources.iter().filter(|s| s["content"] == p.as_str()).count() == 1)
        .count();
    let st = Stats::of(&walls);
    let n = walls.len();
    report.sections.push(Section {
        title: format!("Burst: {BURST} prompts at once against the real Server"),
        intro: format!(
            "{BURST} `{}` processes started together, one per session (each bound to the same ready scope), \
             one shared state directory, {rounds} rounds after a warm-up round, the default 4 s budget. \
             Every capture is handed to the detached drainer after the answer; the bench then reads the \
             scope's Sources back and counts each prompt. The single-process Server serves the 32 prepares \
             about one at a time, so most of them outlast the hook's 1 s request timeout: those hooks answer \
             without context at about 1 s (fail open, well within the budget), and their captures are \
             delivered all the same.",
            host.exe
        ),
        rows: vec![Row {
            id: "path.burst".into(),
            label: format!("per hook, {BURST} at once"),
            stats: st,
            extra: json!({
                "budget_ms": budget.as_millis(),
                "over_budget": over_budget,
                "injected": injected,
                "prompts": prompts.len(),
                "delivered_exactly_once": once,
            }),
            note: format!(
                "p99 {:.1} ms, max {:.1} ms (budget {} ms; {over_budget} over); context injected in {injected} \
                 of {n}; delivered exactly once: {once} of {} prompts",
                st.p99,
                st.max,
                budget.as_millis(),
                prompts.len()
            ),
        }],
    });
    report.targets.push(Target {
        name: format!("burst of {BURST}"),
        goal: "every hook within budget, every prompt delivered exactly once".into(),
        measured: format!(
            "{over_budget} of {n} over budget; {once} of {} delivered exactly once",
            prompts.len()
        ),
        met: Some(over_budget == 0 && once == prompts.len()),
    });
}

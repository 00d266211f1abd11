//! Real Gemini CLI runner: drives the pinned Gemini CLI (tests/e2e/gemini-cli/node_modules)
//! headless (`gemini -p … -o json`) against a loopback fake model that speaks the Gemini API, in
//! a throwaway HOME with a clean environment. Our hook gets there either through our own `setup`
//! (run by the test with [`GeminiSession::run_other`]) or wired in directly by this runner
//! ([`GeminiSessionBuilder::hook`]) for scenarios about the hook alone. It never runs Gemini CLI
//! outside a loopback-only network namespace, never touches the real HOME and never skips: a
//! missing prerequisite panics with the script that installs it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use powercontext_hooks_core::host::Integration;
use serde_json::{Value, json};

use crate::fake_model::{FAKE_MODEL_NAME, FakeModel};
use crate::hosts::{hook_command_value, repo_root};
use crate::process::ProcessRun;
use crate::sandbox::{Sandbox, node_dir};

/// Outer limit for one Gemini CLI command; a healthy headless run takes a few seconds.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The events the runner wires a hook to when it does so itself (what setup registers).
pub const HOOK_EVENTS: [&str; 4] = ["SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"];

/// The pinned `gemini` CLI; panics with the fix when it is not installed.
pub fn gemini_cli() -> PathBuf {
    let path = repo_root().join("tests/e2e/gemini-cli/node_modules/.bin/gemini");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/ensure-host-gemini-cli (make test does)",
        path.display()
    );
    path
}

/// What Gemini CLI wraps every hook context in, in the model request.
pub fn hook_context_parts(body: &Value) -> Vec<String> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .filter(|t| t.contains("<hook_context>"))
        .collect()
}

/// Every text part of the last `user` content of a Gemini API request (the turn's prompt and the
/// contexts hooks added to it).
pub fn last_user_texts(body: &Value) -> Vec<String> {
    body["contents"]
        .as_array()
        .and_then(|c| c.iter().rev().find(|c| c["role"] == "user"))
        .and_then(|c| c["parts"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

/// Configures a [`GeminiSession`].
pub struct GeminiSessionBuilder {
    model_url: String,
    hook: Option<PathBuf>,
    timeout_ms: u64,
    record: bool,
    settings: Value,
    env: Vec<(String, String)>,
}

impl GeminiSessionBuilder {
    /// Wires `exe` (which need not exist: a broken setup is a scenario too) into the settings
    /// file for [`HOOK_EVENTS`], as setup would, without running setup.
    pub fn hook(mut self, exe: &Path) -> Self {
        self.hook = Some(exe.to_path_buf());
        self
    }

    /// The timeout of a hook wired with [`GeminiSessionBuilder::hook`], in milliseconds.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = ms;
        self
    }

    /// Puts a `sh` recorder in front of the hook that keeps each stdin payload (see
    /// [`GeminiSession::payloads`]).
    pub fn record_payloads(mut self) -> Self {
        self.record = true;
        self
    }

    /// Merges `extra` (top-level members) into the settings file written before the first run.
    pub fn settings(mut self, extra: &Value) -> Self {
        if let (Some(to), Some(from)) = (self.settings.as_object_mut(), extra.as_object()) {
            to.extend(from.clone());
        }
        self
    }

    /// An extra variable in Gemini CLI's (and so the hook's) environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Creates the throwaway HOME, project and state dirs and writes `~/.gemini/settings.json`.
    pub fn build(self) -> GeminiSession {
        let cli = gemini_cli();
        let mut sandbox = Sandbox::new(Integration::GeminiCli, node_dir());
        let payloads = sandbox.path("payloads");
        let config = sandbox.home.join(".gemini");
        for dir in [&payloads, &config] {
            fs::create_dir_all(dir).expect("create session dirs");
        }
        for (k, v) in [
            ("GEMINI_API_KEY", "fake-gemini-key"),
            ("GOOGLE_GEMINI_BASE_URL", self.model_url.as_str()),
            ("GEMINI_CLI_NO_RELAUNCH", "true"),
            ("NO_COLOR", "1"),
        ] {
            sandbox.set(k, v);
        }
        for (k, v) in self.env {
            sandbox.set(&k, v);
        }
        let session = GeminiSession {
            cli,
            payloads,
            sandbox,
        };
        let mut settings = self.settings;
        if let Some(exe) = &self.hook {
            let exe = if self.record {
                session.write_recorder(exe)
            } else {
                exe.clone()
            };
            let command = hook_command_value(&exe);
            let command: String = serde_json::from_str(&format!("\"{command}\"")).expect("JSON string body");
            let entry = json!([{"hooks": [{"type": "command", "name": "powercontext", "command": command, "timeout": self.timeout_ms}]}]);
            let hooks: serde_json::Map<String, Value> = HOOK_EVENTS
                .iter()
                .map(|e| ((*e).to_owned(), entry.clone()))
                .collect();
            settings["hooks"] = Value::Object(hooks);
        }
        session.write_settings(&settings);
        session
    }
}

/// A throwaway HOME and project for Gemini CLI.
pub struct GeminiSession {
    cli: PathBuf,
    payloads: PathBuf,
    sandbox: Sandbox,
}

impl GeminiSession {
    /// Starts configuring a session talking to `model` (no hook unless one is wired or set up).
    pub fn builder(model: &FakeModel) -> GeminiSessionBuilder {
        GeminiSessionBuilder {
            model_url: model.url(),
            hook: None,
            timeout_ms: 10_000,
            record: false,
            // Gemini API key auth, nothing that phones home, no update checks.
            settings: json!({
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
            }),
            env: Vec::new(),
        }
    }

    /// The session's working directory (the `cwd` the hook sees).
    pub fn project_dir(&self) -> &Path {
        &self.sandbox.project
    }

    /// The throwaway HOME.
    pub fn home_dir(&self) -> &Path {
        &self.sandbox.home
    }

    /// `~/.gemini/settings.json`.
    pub fn settings_path(&self) -> PathBuf {
        self.sandbox.home.join(".gemini").join("settings.json")
    }

    /// The hooks' state directory (`POWERCONTEXT_HOOKS_STATE_DIR`) of this session.
    pub fn state_dir(&self) -> PathBuf {
        self.sandbox.state.clone()
    }

    /// Sets one variable of the environment every later run gets.
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.sandbox.set(name, value);
    }

    /// Replaces the settings file.
    pub fn write_settings(&self, settings: &Value) {
        self.write_settings_text(&serde_json::to_string_pretty(settings).expect("settings are JSON"));
    }

    /// Replaces the settings file with exactly `text` (comments and all).
    pub fn write_settings_text(&self, text: &str) {
        fs::write(self.settings_path(), text).expect("write gemini settings");
    }

    /// The settings file's text.
    pub fn settings_text(&self) -> String {
        fs::read_to_string(self.settings_path()).expect("read gemini settings")
    }

    /// First prompt of a new session.
    pub fn prompt(&self, text: &str) -> ProcessRun {
        self.run(&["-p", text, "-m", FAKE_MODEL_NAME, "-o", "json", "--skip-trust"])
    }

    /// Next prompt in the latest session (`-r latest`).
    pub fn resume(&self, text: &str) -> ProcessRun {
        self.run(&[
            "-p",
            text,
            "-r",
            "latest",
            "-m",
            FAKE_MODEL_NAME,
            "-o",
            "json",
            "--skip-trust",
        ])
    }

    /// Runs the Gemini CLI with `args` in the project dir (clean env, stdin from /dev/null, an
    /// outer timeout that kills the process group).
    pub fn run(&self, args: &[&str]) -> ProcessRun {
        self.sandbox.run(&self.cli, args, RUN_TIMEOUT, "gemini-cli")
    }

    /// Runs another program (our CLI) in this session's environment and project dir.
    pub fn run_other(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> ProcessRun {
        self.sandbox.run_other(&self.cli, program, args, extra)
    }

    /// Every payload the recorder kept, whatever the event, in order.
    pub fn payloads(&self) -> Vec<Value> {
        let mut files: Vec<PathBuf> = fs::read_dir(&self.payloads)
            .expect("payload dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                serde_json::from_str(&fs::read_to_string(f).expect("read payload")).expect("payload is JSON")
            })
            .collect()
    }

    fn write_recorder(&self, exe: &Path) -> PathBuf {
        let script = self.sandbox.path("record-hook");
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
        let body = format!(
            "#!/bin/sh\n# e2e payload recorder: keep stdin, then run the real hook on it\n\
             f={dir}/\"$(date +%s%N)-$$.json\"\ncat >\"$f\"\nexec {exe} <\"$f\"\n",
            dir = quote(&self.payloads),
            exe = quote(exe),
        );
        fs::write(&script, body).expect("write recorder");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod recorder");
        script
    }
}

/// Gemini CLI's `-o json` answer.
impl ProcessRun {
    /// The `response` of `gemini -o json` (the JSON object on stdout; text before it is noise).
    pub fn gemini_response(&self) -> Option<String> {
        let start = self.stdout.find('{')?;
        let v: Value = serde_json::from_str(&self.stdout[start..]).ok()?;
        v["response"].as_str().map(str::to_owned)
    }

    /// Panics (with the output) unless Gemini CLI exited 0 and answered `reply`.
    pub fn assert_gemini_completed(&self, reply: &str) {
        assert!(
            self.status.success() && self.gemini_response().as_deref() == Some(reply),
            "gemini turn did not complete (status {:?}, response {:?})\n--- stdout\n{}\n--- stderr\n{}",
            self.status.code(),
            self.gemini_response(),
            self.stdout,
            self.stderr
        );
    }
}

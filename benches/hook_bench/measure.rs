//! Timing one process the way a host runs a hook: spawn with a clean environment, write the stdin
//! payload, wait for exit; wall time is spawn → exit as seen by the parent. Also percentile
//! statistics and peak RSS through `/usr/bin/time`. It never interprets what a hook printed beyond
//! the check a scenario asks for.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One process to run: program, arguments, the whole environment, stdin and working directory;
/// optionally a second process the host starts right after it for the same prompt (no shipped
/// host does since OpenCode's prompt became one process).
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub cwd: PathBuf,
    pub then: Option<Box<Invocation>>,
}

/// What one run did (for a two-process prompt: both, outputs concatenated, walls summed).
#[derive(Debug)]
pub struct RunOut {
    pub wall: Duration,
    /// Each process's own spawn → exit, in order.
    pub steps: Vec<Duration>,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Invocation {
    pub fn new(program: impl Into<PathBuf>, cwd: &Path) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            stdin: Vec::new(),
            cwd: cwd.to_path_buf(),
            then: None,
        }
    }

    /// The process the host starts next for the same prompt; it shares this one's environment.
    pub fn then(mut self, next: Invocation) -> Self {
        self.then = Some(Box::new(next));
        self
    }

    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_owned());
        self
    }

    /// Sets (or replaces) one variable, in every process of the prompt.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        let value = value.into();
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.clone()));
        self.then = self.then.map(|n| Box::new(n.env(key, value)));
        self
    }

    /// The first process's stdin.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = bytes;
        self
    }

    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs once and times spawn → exit.
    ///
    /// The payload is written from this thread before reading the output: every hook reads its
    /// whole stdin before writing anything, and a process that never reads (the baselines) gets
    /// an empty payload, so this cannot deadlock; it also keeps a writer thread out of the timing.
    pub fn run(&self) -> RunOut {
        let first = self.run_alone();
        match &self.then {
            // The host only starts the next step after the first exited, and the shim hands it
            // what the first printed (OpenCode's prepared context); the host sees the second's
            // answer.
            Some(next) => {
                let prepared = first.stdout.lines().next().and_then(|l| {
                    let v: Value = serde_json::from_str(l).ok()?;
                    v["text"].as_str().map(str::to_owned)
                });
                let mut next = (**next).clone();
                if let Ok(mut v) = serde_json::from_slice::<Value>(&next.stdin) {
                    v["prepared"] = json!(prepared.into_iter().collect::<Vec<_>>());
                    next.stdin = serde_json::to_vec(&v).expect("payload serializes");
                }
                let second = next.run();
                RunOut {
                    wall: first.wall + second.wall,
                    steps: [first.steps, second.steps].concat(),
                    success: first.success && second.success,
                    stdout: second.stdout,
                    stderr: first.stderr + &second.stderr,
                }
            }
            None => first,
        }
    }

    fn run_alone(&self) -> RunOut {
        let mut cmd = self.command(&self.program);
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.program.display()));
        let mut stdin = child.stdin.take().expect("stdin pipe");
        // A process that exits without reading may close the pipe first: not an error here.
        let _ = stdin.write_all(&self.stdin);
        drop(stdin);
        let out = child.wait_with_output().expect("wait for the process");
        let wall = start.elapsed();
        RunOut {
            wall,
            steps: vec![wall],
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Peak resident set size in KiB, measured by `/usr/bin/time -f %M` around one run (the
    /// larger of the two processes of a two-process prompt).
    pub fn peak_rss_kib(&self, scratch: &Path) -> Option<u64> {
        let first = self.peak_rss_alone(scratch)?;
        match &self.then {
            Some(next) => Some(first.max(next.peak_rss_kib(scratch)?)),
            None => Some(first),
        }
    }

    fn peak_rss_alone(&self, scratch: &Path) -> Option<u64> {
        let report = scratch.join("rss.txt");
        let mut cmd = Command::new(TIME);
        cmd.arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&report)
            .arg(&self.program)
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().ok()?;
        let mut stdin = child.stdin.take()?;
        let _ = stdin.write_all(&self.stdin);
        drop(stdin);
        child.wait_with_output().ok()?;
        std::fs::read_to_string(&report)
            .ok()?
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .next_back()
    }
}

/// GNU time (Debian package `time`): reports the child's `ru_maxrss` without any unsafe code here.
pub const TIME: &str = "/usr/bin/time";

/// Summary statistics of wall times, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Stats {
    /// Nearest-rank percentiles (no interpolation: every figure is a time that was measured).
    pub fn of(samples: &[Duration]) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let k = (p / 100.0 * ms.len() as f64).ceil() as usize;
            ms[k.clamp(1, ms.len()) - 1]
        };
        Stats {
            n: ms.len(),
            min: ms[0],
            p50: rank(50.0),
            p95: rank(95.0),
            p99: rank(99.0),
            max: ms[ms.len() - 1],
            mean: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }

    pub fn to_json(self) -> Value {
        json!({
            "n": self.n,
            "min_ms": round3(self.min),
            "p50_ms": round3(self.p50),
            "p95_ms": round3(self.p95),
            "p99_ms": round3(self.p99),
            "max_ms": round3(self.max),
            "mean_ms": round3(self.mean),
        })
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

//! The results of one run and how they are written: `docs/benchmarks.md` (tables for people, with
//! the machine they were measured on) and `docs/benchmarks.json` (the same figures for tools). It
//! measures nothing itself and never rounds a figure before a ratio is computed.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::measure::{Stats, round3};

/// One measured row.
pub struct Row {
    pub id: String,
    pub label: String,
    pub stats: Stats,
    /// Free-form figures specific to the row (ratios, request counts, …).
    pub extra: Value,
    pub note: String,
}

/// One table.
pub struct Section {
    pub title: String,
    pub intro: String,
    pub rows: Vec<Row>,
}

/// A table of figures other than times (bytes, counts), already rendered.
pub struct ByteSection {
    pub title: String,
    pub intro: String,
    pub table: String,
    pub json: Value,
}

/// One target of the issue and its verdict.
pub struct Target {
    pub name: String,
    pub goal: String,
    pub measured: String,
    pub met: Option<bool>,
}

/// Everything one `make bench` run produced.
#[derive(Default)]
pub struct Report {
    pub sections: Vec<Section>,
    pub byte_sections: Vec<ByteSection>,
    pub targets: Vec<Target>,
    pub headline: Vec<String>,
    pub sizes: Vec<(String, u64, Option<u64>)>,
    pub notes: Vec<String>,
    pub machine: Vec<(String, String)>,
    pub runs: usize,
    pub elapsed_secs: f64,
}

fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
        .unwrap_or_else(|| "not available".to_owned())
}

fn file_field(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once([':', '='])?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The machine and toolchain the figures belong to.
pub fn machine_info(python: &str, node: &str) -> Vec<(String, String)> {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let mem = file_field("/proc/meminfo", "MemTotal")
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .map_or_else(
            || "unknown".to_owned(),
            |kib| format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0),
        );
    let repo = env!("CARGO_MANIFEST_DIR");
    let commit = command_line("git", &["-C", repo, "rev-parse", "--short=12", "HEAD"]);
    let dirty = Command::new("git")
        .args(["-C", repo, "status", "--porcelain", "--untracked-files=no"])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    vec![
        ("Date (UTC)".into(), utc_now()),
        (
            "CPU".into(),
            file_field("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into()),
        ),
        ("Logical CPUs".into(), cpus.to_string()),
        ("Memory".into(), mem),
        (
            "OS".into(),
            file_field("/etc/os-release", "PRETTY_NAME").unwrap_or_else(|| "unknown".into()),
        ),
        (
            "Kernel".into(),
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".into(), |s| s.trim().to_owned()),
        ),
        ("rustc".into(), command_line("rustc", &["--version"])),
        (
            "Python (baseline)".into(),
            format!("{} ({})", command_line(python, &["--version"]), tilde(python)),
        ),
        (
            "Node.js (baseline)".into(),
            format!("{} ({})", command_line(node, &["--version"]), tilde(node)),
        ),
        ("git".into(), command_line("git", &["--version"])),
        ("Load average at start (1/5/15 min)".into(), load_average()),
        (
            "Commit".into(),
            if dirty {
                format!("{commit} (with uncommitted changes)")
            } else {
                commit
            },
        ),
    ]
}

/// The 1/5/15-minute load averages: figures from a busy machine are not comparable with a quiet one.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" / "))
        .unwrap_or_else(|_| "unknown".into())
}

/// `YYYY-MM-DD HH:MM:SS` from the system clock (civil-from-days, no date crate needed).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "n/a",
    }
}

impl Report {
    pub fn markdown(&self, analysis: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Benchmarks\n");
        let _ = writeln!(
            s,
            "Generated by `make bench` (`benches/hook_bench/`) in one run of {:.0} s; rerun it to \
             refresh this file and `docs/benchmarks.json`. Every figure below comes from that single \
             run: the interpreter baselines were measured in the same run, interleaved with the hooks, \
             so the ratios compare like with like. Times are process wall time, spawn → exit, as a \
             host sees it (milliseconds; nearest-rank percentiles).\n",
            self.elapsed_secs
        );
        let _ = writeln!(s, "## Headline\n");
        for h in &self.headline {
            let _ = writeln!(s, "- {h}");
        }
        let _ = writeln!(s, "\n## Machine\n\n| | |\n|---|---|");
        for (k, v) in &self.machine {
            let _ = writeln!(s, "| {k} | {v} |");
        }
        let _ = writeln!(
            s,
            "\n## Targets\n\n| Target | Goal | Measured | Verdict |\n|---|---|---|---|"
        );
        for t in &self.targets {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                t.name,
                t.goal,
                t.measured,
                verdict(t.met)
            );
        }
        for sec in &self.sections {
            let _ = writeln!(s, "\n## {}\n", sec.title);
            if !sec.intro.is_empty() {
                let _ = writeln!(s, "{}\n", sec.intro);
            }
            let _ = writeln!(
                s,
                "| Row | n | p50 | p95 | p99 | max | Notes |\n|---|---:|---:|---:|---:|---:|---|"
            );
            for r in &sec.rows {
                let st = r.stats;
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    r.label,
                    st.n,
                    ms(st.p50),
                    ms(st.p95),
                    ms(st.p99),
                    ms(st.max),
                    r.note
                );
            }
        }
        for sec in &self.byte_sections {
            let _ = writeln!(
                s,
                "\n## {}\n\n{}\n\n{}",
                sec.title,
                sec.intro,
                sec.table.trim_end()
            );
        }
        let _ = writeln!(
            s,
            "\n## Binary size and peak RSS\n\nRelease profile (fat LTO, `panic = \"abort\"`, stripped). \
             Peak RSS is the largest `ru_maxrss` (GNU `/usr/bin/time -f %M`) over the runs shown, on the \
             full prompt path against the instant Server.\n\n| Executable | Size | Peak RSS |\n|---|---:|---:|"
        );
        for (name, size, rss) in &self.sizes {
            let rss = rss.map_or_else(|| "—".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
            let size = if *size == 0 {
                "—".to_owned()
            } else {
                format!("{:.2} MiB", *size as f64 / 1024.0 / 1024.0)
            };
            let _ = writeln!(s, "| `{name}` | {size} | {rss} |");
        }
        let _ = writeln!(s, "\n## Method\n");
        for n in &self.notes {
            let _ = writeln!(s, "- {n}");
        }
        if !analysis.trim().is_empty() {
            let _ = writeln!(s, "\n{}", analysis.trim_end());
        }
        s
    }

    pub fn json(&self) -> Value {
        let sections: Vec<Value> = self
            .sections
            .iter()
            .map(|sec| {
                json!({
                    "title": sec.title,
                    "rows": sec.rows.iter().map(|r| json!({
                        "id": r.id, "label": r.label, "stats": r.stats.to_json(), "extra": r.extra,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "schema": "powercontext-hooks.benchmarks.v1",
            "machine": self.machine.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "runs_per_row": self.runs,
            "elapsed_seconds": round3(self.elapsed_secs),
            "targets": self.targets.iter().map(|t| json!({
                "name": t.name, "goal": t.goal, "measured": t.measured, "met": t.met,
            })).collect::<Vec<_>>(),
            "sections": sections,
            "byte_sections": self.byte_sections.iter().map(|b| json!({"title": b.title, "figures": b.json})).collect::<Vec<_>>(),
            "binaries": self.sizes.iter().map(|(n, size, rss)| json!({
                "name": n, "bytes": size, "peak_rss_kib": rss,
            })).collect::<Vec<_>>(),
        })
    }

    pub fn write(&self, dir: &Path, analysis: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("benchmarks.md"), self.markdown(analysis))?;
        let mut json = serde_json::to_string_pretty(&self.json()).map_err(std::io::Error::other)?;
        json.push('\n');
        std::fs::write(dir.join("benchmarks.json"), json)
    }
}

/// A path with the home directory shown as `~`, so reports name no machine-specific home.
pub fn tilde(path: &str) -> String {
    match std::env::home_dir().and_then(|h| h.to_str().map(str::to_owned)) {
        Some(home) if !home.is_empty() && path.starts_with(&format!("{home}/")) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_owned(),
    }
}

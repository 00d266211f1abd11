//! Holds the structure the code promises: every fact about a host lives in the host table
//! (`shared/core/src/host.rs`), and production code names a host (its enum variant or its
//! string name) only where behaviour truly differs, each such place listed here with its reason.
//! The hosts and their names are read from the table itself, so a new row is covered at once.

use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every production `.rs` file of the workspace (test-support and test modules excluded),
/// relative to the root, with its text up to its `#[cfg(test)]` module.
fn production_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for top in ["bins", "shared", "src"] {
        walk(&root().join(top), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
        if rel.starts_with("shared/test-support/") || rel.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        out.push((rel, production_part(&text)));
    }
    assert!(out.len() > 40, "found only {} source files", out.len());
    out
}

/// A source's text before its unit-test module, with whole-line comments blanked (line numbers
/// kept).
fn production_part(text: &str) -> String {
    let code = text.find("#[cfg(test)]\nmod ").map_or(text, |i| &text[..i]);
    code.lines()
        .map(|l| if l.trim_start().starts_with("//") { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hosts of the table: (enum variant, string name), read from `host.rs`.
fn table_hosts() -> Vec<(String, String)> {
    let host_rs = std::fs::read_to_string(root().join("shared/core/src/host.rs")).unwrap();
    let rows = host_rs
        .split_once("pub static HOSTS")
        .and_then(|(_, r)| r.split_once("\n];\n"))
        .expect("the HOSTS table")
        .0;
    let mut hosts = Vec::new();
    for row in rows.split("HostSpec {").skip(1) {
        let variant = row
            .split_once("host: Integration::")
            .and_then(|(_, r)| r.split_once(','))
            .map(|(v, _)| v.trim().to_owned())
            .expect("a row's host");
        let name = row
            .split_once("name: \"")
            .and_then(|(_, r)| r.split_once('"'))
            .map(|(n, _)| n.to_owned())
            .expect("a row's name");
        hosts.push((variant, name));
    }
    assert!(hosts.len() >= 5, "{hosts:?}");
    hosts
}

/// Where production code names a host outside the table, each with why it cannot be data:
/// (file, host name, reason).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "bins/cli/src/hosts/mod.rs",
        "*",
        "the dispatch to each host's installer: the one place that picks it",
    ),
    (
        "bins/cli/src/package.rs",
        "*",
        "each host's package has a shape of its own (manifests, shims, profile rows)",
    ),
    (
        "bins/cli/src/setup.rs",
        "*",
        "what each host CLI writes on its first run is its own layout (dry-run watch list)",
    ),
    (
        "shared/core/src/config.rs",
        "*",
        "the config file's `[hosts.*]` tables are serde fields, refused by name when unknown",
    ),
    (
        "shared/core/src/official.rs",
        "*",
        "each official installer keeps the server URL in a file format of its own",
    ),
    (
        "bins/cli/src/interop.rs",
        "codex",
        "`setup codex --trust-only`: only Codex asks for hook trust",
    ),
    (
        "bins/cli/src/activity.rs",
        "claude-code",
        "the status line is Claude Code's, and reads its journal",
    ),
    (
        "bins/cli/src/ops.rs",
        "claude-code",
        "the default host of explicit operations",
    ),
    (
        "bins/cli/src/state_cmd.rs",
        "codex",
        "the default recording host of a test-only state command",
    ),
    (
        "bins/cli/src/hosts/opencode.rs",
        "opencode",
        "OpenCode's XDG config folder name",
    ),
];

/// Whether `file` is the host's own place: its hook crate, or its installer in `bins/cli/src/hosts/`.
fn own_file(file: &str, name: &str) -> bool {
    file.starts_with(&format!("bins/{name}/"))
        || file == format!("bins/cli/src/hosts/{}.rs", name.replace('-', "_"))
}

/// Every place a production source names a host: (file, line, host name, the line).
fn host_mentions() -> Vec<(String, usize, String, String)> {
    let hosts = table_hosts();
    let mut found = Vec::new();
    for (file, text) in production_sources() {
        if file == "shared/core/src/host.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            for (variant, name) in &hosts {
                let by_variant = ["Integration::", "Host::", "Self::"].iter().any(|p| {
                    let needle = format!("{p}{variant}");
                    line.match_indices(&needle).any(|(at, _)| {
                        !line[at + needle.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    })
                });
                let by_name = line.contains(&format!("\"{name}\""));
                if by_variant || by_name {
                    found.push((file.clone(), n + 1, name.clone(), line.trim().to_owned()));
                }
            }
        }
    }
    found
}

#[test]
fn hosts_are_named_only_in_the_host_table_or_an_allowed_place() {
    let mentions = host_mentions();
    let stray: Vec<String> = mentions
        .iter()
        .filter(|(file, _, name, _)| {
            !own_file(file, name)
                && !ALLOWED
                    .iter()
                    .any(|(f, n, _)| f == file && (*n == "*" || n == name))
        })
        .map(|(file, line, name, text)| format!("{file}:{line} names {name}: {text}"))
        .collect();
    assert!(
        stray.is_empty(),
        "a host is named outside the host table (shared/core/src/host.rs): make it a column of \
         HostSpec, or add the place to ALLOWED in tests/structure.rs with the reason it cannot be \
         data:\n{}",
        stray.join("\n")
    );
    // A stale exception hides nothing: every allowed place still names its host.
    for (file, name, reason) in ALLOWED {
        assert!(
            mentions
                .iter()
                .any(|(f, _, n, _)| f == file && (*name == "*" || n == name)),
            "{file} no longer names {name}: drop its exception ({reason})"
        );
    }
}

#[test]
fn the_host_naming_check_sees_a_stray_variant_and_name() {
    // The scanner itself: a match arm and a string literal outside the table are both found.
    let text = production_part("fn f(h: Host) -> bool {\n    h == Host::Codex || x == \"pi\"\n}\n");
    let line = text.lines().nth(1).unwrap();
    assert!(line.contains("Host::Codex") && line.contains("\"pi\""));
    let test_only = production_part("fn f() {}\n#[cfg(test)]\nmod tests {\n    Host::Codex\n}\n");
    assert!(!test_only.contains("Host::Codex"));
    let hosts = table_hosts();
    assert!(
        hosts.contains(&("ClaudeCode".to_owned(), "claude-code".to_owned())),
        "{hosts:?}"
    );
    assert!(own_file("bins/cli/src/hosts/claude_code.rs", "claude-code"));
    assert!(own_file("bins/dsh/src/lib.rs", "dsh"));
    assert!(!own_file("bins/cli/src/setup.rs", "dsh"));
}

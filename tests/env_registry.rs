//! Holds the promise that every `POWERCONTEXT_*` variable is declared once, in
//! `shared/core/src/variables.rs`: production Rust names a variable only through that registry,
//! every name the installers' shims, the README and the docs mention is one of its variables, and
//! every setting it lists is in the configuration reference.

use std::path::{Path, PathBuf};

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::variables::{self, ALL, Kind, Name, PREFIX};

const REGISTRY: &str = "shared/core/src/variables.rs";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn parts() -> Vec<&'static str> {
    Integration::ALL.iter().map(|h| h.env_part()).collect()
}

fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "node_modules" || name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(&p, keep, out);
        } else if keep(&p) {
            out.push(p);
        }
    }
}

/// Files under `tops` whose name `keep` accepts, relative to the root, with their text.
fn files(tops: &[&str], keep: &dyn Fn(&Path) -> bool) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    for top in tops {
        let p = root().join(top);
        if p.is_file() {
            paths.push(p);
        } else {
            walk(&p, keep, &mut paths);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            Some((
                p.strip_prefix(root()).unwrap().to_string_lossy().into_owned(),
                text,
            ))
        })
        .collect()
}

/// Production Rust: every crate's sources without test-support, `tests.rs` files and the
/// `#[cfg(test)]` module.
fn production_rust() -> Vec<(String, String)> {
    let out: Vec<(String, String)> = files(&["bins", "shared", "src"], &|p| {
        p.extension().is_some_and(|x| x == "rs")
    })
    .into_iter()
    .filter(|(f, _)| !f.starts_with("shared/test-support/") && !f.ends_with("/tests.rs"))
    .map(|(f, t)| {
        let code = t
            .find("#[cfg(test)]\nmod ")
            .map_or(t.as_str(), |i| &t[..i])
            .to_owned();
        (f, code)
    })
    .collect();
    assert!(out.len() > 40, "found only {} sources", out.len());
    out
}

/// Every mention of a variable: `POWERCONTEXT_` not preceded by a word character, with the
/// name's characters after it (a `<HOST>`-style placeholder included), and whether it stood
/// alone in a string literal (`"POWERCONTEXT_…"`) or was a `format!` builder (`POWERCONTEXT_{`).
fn mentions(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(PREFIX) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + PREFIX.len()..];
        let len = rest
            .find(|c: char| {
                !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '<' || c == '>')
            })
            .unwrap_or(rest.len());
        let name = format!("{PREFIX}{}", &rest[..len]);
        let after = rest[len..].chars().next();
        let declared = (before == Some('"') && after == Some('"')) || after == Some('{');
        let line = text[..at].matches('\n').count() + 1;
        out.push((line, name, declared));
    }
    out
}

/// Every concrete name the registry stands for.
fn concrete_names() -> Vec<String> {
    let parts = parts();
    ALL.iter()
        .flat_map(|v| match v.name {
            Name::Exact(n) => vec![n.to_owned()],
            Name::PerHost(s) => parts.iter().map(|p| variables::per_host(p, s)).collect(),
        })
        .collect()
}

/// Why a mentioned name is not a variable of the registry, if it is not.
fn unknown(name: &str) -> Option<String> {
    let parts = parts();
    // `POWERCONTEXT_<H>_SUFFIX` or `POWERCONTEXT_<HOST>_…`: a per-host pattern or its prefix.
    if let Some(rest) = name.strip_prefix(PREFIX).filter(|r| r.starts_with('<')) {
        let suffix = rest.split_once(">_").map(|(_, s)| s)?;
        let per_host = ALL
            .iter()
            .any(|v| matches!(v.name, Name::PerHost(s) if s == suffix));
        return (!suffix.is_empty() && !per_host).then(|| format!("no per-host variable `…_{suffix}`"));
    }
    // `POWERCONTEXT_*`: the family as a whole.
    if name == PREFIX {
        return None;
    }
    if name.ends_with('_') {
        let known = concrete_names().iter().any(|n| n.starts_with(name));
        return (!known).then(|| "no variable starts so".to_owned());
    }
    variables::find(name, &parts)
        .is_none()
        .then(|| "not in the registry".to_owned())
}

#[test]
fn every_name_the_registry_stands_for_is_one_variable() {
    let parts = parts();
    let names = concrete_names();
    for name in &names {
        let owners: Vec<String> = ALL
            .iter()
            .filter(|v| v.name.matches(name, &parts))
            .map(|v| v.name.pattern())
            .collect();
        assert_eq!(owners.len(), 1, "{name} is declared by {owners:?}");
    }
    assert!(names.contains(&"POWERCONTEXT_CODEX_SCOPE_ID".to_owned()));
}

#[test]
fn production_code_and_installers_name_only_registered_variables_declared_once() {
    let mut problems = Vec::new();
    for (file, text) in production_rust() {
        if file == REGISTRY {
            continue;
        }
        for (line, name, declared) in mentions(&text) {
            if declared {
                problems.push(format!(
                    "{file}:{line}: {name} is declared here: name it through \
                     powercontext_hooks_core::variables (declared once, in {REGISTRY})"
                ));
            } else if let Some(why) = unknown(&name) {
                problems.push(format!("{file}:{line}: {name}: {why}: add it to {REGISTRY}"));
            }
        }
    }
    let installers = files(&["installers"], &|_| true);
    assert!(installers.len() > 10, "{}", installers.len());
    for (file, text) in installers {
        for (line, name, _) in mentions(&text) {
            if let Some(why) = unknown(&name) {
                problems.push(format!("{file}:{line}: {name}: {why}: add it to {REGISTRY}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_docs_name_only_registered_variables_and_list_every_setting() {
    let docs = files(&["README.md", "docs"], &|p| {
        p.extension().is_some_and(|x| x == "md")
    });
    assert!(docs.len() > 5, "{}", docs.len());
    let mut problems = Vec::new();
    for (file, text) in &docs {
        for (line, name, _) in mentions(text) {
            if let Some(why) = unknown(&name) {
                problems.push(format!("{file}:{line}: {name}: {why}: add it to {REGISTRY}"));
            }
        }
    }
    let reference = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let listed: Vec<String> = mentions(&reference).into_iter().map(|(_, n, _)| n).collect();
    for v in ALL.iter().filter(|v| v.kind == Kind::Setting) {
        let found = match v.name {
            Name::Exact(n) => listed.iter().any(|l| l == n),
            Name::PerHost(s) => listed.iter().any(|l| {
                l.strip_prefix(PREFIX)
                    .and_then(|r| r.split_once(">_"))
                    .is_some_and(|(_, x)| x == s)
            }),
        };
        if !found {
            problems.push(format!(
                "docs/configuration.md does not list the setting {} ({})",
                v.name.pattern(),
                v.meaning
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scanner_sees_declarations_builders_and_unknown_names() {
    let found = mentions(
        "const A: &str = \"POWERCONTEXT_HOOKS_CONFIG\";\nformat!(\"POWERCONTEXT_{}_X\"); \
         // set POWERCONTEXT_HOOKS_STATE_DIR or XPOWERCONTEXT_NO\n`POWERCONTEXT_<H>_MAX_BYTES`",
    );
    let names: Vec<(usize, &str, bool)> = found.iter().map(|(l, n, d)| (*l, n.as_str(), *d)).collect();
    assert_eq!(
        names,
        [
            (1, "POWERCONTEXT_HOOKS_CONFIG", true),
            (2, "POWERCONTEXT_", true),
            (2, "POWERCONTEXT_HOOKS_STATE_DIR", false),
            (3, "POWERCONTEXT_<H>_MAX_BYTES", false),
        ]
    );
    assert_eq!(unknown("POWERCONTEXT_<H>_MAX_BYTES"), None);
    assert!(unknown("POWERCONTEXT_<H>_MAX_BITES").is_some());
    assert!(unknown("POWERCONTEXT_CLAUDE_SERVERURL").is_some());
    assert_eq!(unknown("POWERCONTEXT_CLAUDE_"), None);
    assert!(unknown("POWERCONTEXT_NOBODY_").is_some());
    assert_eq!(unknown("POWERCONTEXT_"), None);
}

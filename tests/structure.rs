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
        "bins/cli/src/commands/package.rs",
        "*",
        "each host's package has a shape of its own (manifests, shims, profile rows)",
    ),
    (
        "bins/cli/src/commands/setup.rs",
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
        "bins/cli/src/commands/interop.rs",
        "codex",
        "`setup codex --trust-only`: only Codex asks for hook trust",
    ),
    (
        "bins/cli/src/commands/activity.rs",
        "claude-code",
        "the status line is Claude Code's, and reads its journal",
    ),
    (
        "bins/cli/src/support/ops.rs",
        "claude-code",
        "the default host of explicit operations",
    ),
    (
        "bins/cli/src/commands/state_cmd.rs",
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
    assert!(!own_file("bins/cli/src/commands/setup.rs", "dsh"));
}

/// The layers a crate's doc declares: numbered lines (`1. Title: `a`, `b`.`), modules in
/// backticks, in order.
fn declared_layers(lib_rs: &str) -> Vec<Vec<String>> {
    let doc: Vec<&str> = lib_rs
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = doc
        .iter()
        .position(|l| *l == "# Layers")
        .expect("a `# Layers` section in the crate doc");
    let mut layers: Vec<String> = Vec::new();
    for line in &doc[start + 1..] {
        if line.starts_with('#') {
            break;
        }
        let numbered = line
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if numbered {
            layers.push(String::new());
        }
        if let Some(last) = layers.last_mut() {
            last.push_str(line);
            last.push(' ');
        }
    }
    layers
        .iter()
        .map(|l| l.split('`').skip(1).step_by(2).map(str::to_owned).collect())
        .collect()
}

/// The modules a source (the module `own`, as `a::b`) names outside comments and its test
/// module: each `crate::`, `super::` and `self::` path and each path through one of its own
/// child modules, groups (`{a, b::{c, d}}`) included, taken to the longest declared module it
/// starts with (`crate::hosts::codex::X` is `hosts::codex` when that is declared, else `hosts`).
fn crate_imports(source: &str, own: &str, modules: &[String]) -> std::collections::BTreeSet<String> {
    let code = production_part(source);
    let own: Vec<&str> = own.split("::").filter(|s| !s.is_empty()).collect();
    let children: Vec<&str> = modules
        .iter()
        .filter_map(|m| {
            let rest = m.strip_prefix(&own.join("::"))?;
            let rest = if own.is_empty() {
                rest
            } else {
                rest.strip_prefix("::")?
            };
            rest.split("::").next().filter(|c| !c.is_empty())
        })
        .collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = std::collections::BTreeSet::new();
    for (at, _) in code.match_indices("::") {
        // The first `::` of a path: the word before it starts the path.
        let before = &code[..at];
        let word_at = before.trim_end_matches(ident).len();
        let word = &before[word_at..];
        if word.is_empty() || before[..word_at].ends_with(|c: char| ident(c) || c == ':') {
            continue;
        }
        let base: Vec<&str> = match word {
            "crate" => Vec::new(),
            "self" => own.clone(),
            "super" => own[..own.len().saturating_sub(1)].to_vec(),
            w if children.contains(&w) => own.clone(),
            _ => continue,
        };
        let start = if matches!(word, "crate" | "self" | "super") {
            at + 2
        } else {
            word_at
        };
        let bytes = code.as_bytes();
        let mut i = start;
        for tail in path_tree(bytes, &mut i) {
            let mut path: Vec<&str> = base.clone();
            for seg in &tail {
                if seg == "super" {
                    path.pop();
                } else {
                    path.push(seg);
                }
            }
            if let Some(m) = declared_module(&path.join("::"), modules) {
                found.insert(m);
            }
        }
    }
    found
}

/// The paths of one `use` tree (or one path in code) starting at `i`: `a::b::{c, d::e}` gives
/// `[a, b, c]` and `[a, b, d, e]`; `self` members and renames (`as x`) add nothing.
fn path_tree(s: &[u8], i: &mut usize) -> Vec<Vec<String>> {
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut prefix: Vec<String> = Vec::new();
    loop {
        skip_ws(i);
        if *i < s.len() && s[*i] == b'{' {
            *i += 1;
            let mut out = Vec::new();
            loop {
                skip_ws(i);
                if *i >= s.len() {
                    break;
                }
                match s[*i] {
                    b'}' => {
                        *i += 1;
                        break;
                    }
                    b',' => *i += 1,
                    _ => {
                        let before = *i;
                        for tail in path_tree(s, i) {
                            out.push(prefix.iter().cloned().chain(tail).collect());
                        }
                        skip_ws(i);
                        if s[*i..].starts_with(b"as ") {
                            *i += 3;
                            path_tree(s, i);
                        }
                        if *i == before {
                            *i += 1;
                        }
                    }
                }
            }
            return out;
        }
        let start = *i;
        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
            *i += 1;
        }
        if *i == start {
            return vec![prefix];
        }
        let word = String::from_utf8_lossy(&s[start..*i]).into_owned();
        if word != "self" {
            prefix.push(word);
        }
        if s[*i..].starts_with(b"::") {
            *i += 2;
        } else {
            return vec![prefix];
        }
    }
}

/// The declared module a path is in: the longest declared module it equals or starts with.
fn declared_module(path: &str, modules: &[String]) -> Option<String> {
    modules
        .iter()
        .filter(|m| path == m.as_str() || path.starts_with(&format!("{m}::")))
        .max_by_key(|m| m.len())
        .cloned()
}

/// Every module file of a crate's source folder, walked into sub-folders: (its path as `a::b`,
/// its text); `lib.rs`, `main.rs` and test files (`tests.rs`) left out.
fn module_files(dir: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, prefix: &[String], out: &mut Vec<(String, String)>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if path.extension().is_some_and(|x| x == "rs")
                && name != "tests"
                && !(prefix.is_empty() && (name == "lib" || name == "main"))
            {
                let mut module = prefix.to_vec();
                if name != "mod" {
                    module.push(name);
                }
                out.push((module.join("::"), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &[], &mut out);
    out
}

/// Checks one crate's sources (sub-folders too) against the layers its `lib.rs` declares. A
/// declared module is a file (`hosts::codex`) or a folder taken whole (`hosts`: its files not
/// declared on their own). `cycles_known`: the module cycles still allowed, each with its reason.
fn check_layers(src: &str, cycles_known: &[(&[&str], &str)]) {
    let dir = root().join(src);
    let lib_rs = std::fs::read_to_string(dir.join("lib.rs")).unwrap();
    let layers = declared_layers(&lib_rs);
    assert!(layers.len() >= 3, "{src}: {layers:?}");
    let modules: Vec<String> = layers.concat();
    let files = module_files(&dir);
    let graph = import_graph(src, &layers, &files);
    for m in &modules {
        // A module that lives in a crate of its own is re-exported under its name: a leaf here.
        let reexported = lib_rs.lines().any(|l| {
            let l = l.trim();
            l.starts_with("pub use ") && l.ends_with(&format!(" as {m};"))
        });
        assert!(
            graph.contains_key(m) || reexported,
            "{src}/lib.rs declares `{m}`, which is no module"
        );
    }
    let cycles = cycles(&graph);
    for cycle in &cycles {
        let known = cycles_known.iter().any(|(ms, _)| {
            let mut ms: Vec<&str> = ms.to_vec();
            ms.sort_unstable();
            let mut c: Vec<&str> = cycle.iter().map(String::as_str).collect();
            c.sort_unstable();
            ms == c
        });
        assert!(
            known,
            "{src}: the modules {cycle:?} import one another in a cycle"
        );
    }
    for (ms, reason) in cycles_known {
        assert!(
            cycles
                .iter()
                .any(|c| ms.iter().all(|m| c.iter().any(|x| x == m)) && c.len() == ms.len()),
            "{src}: the cycle {ms:?} is gone: drop its exception ({reason})"
        );
    }
}

/// The declared modules' imports of one another, each checked against the layers: panics on a
/// module in no layer and on an import from a later layer.
fn import_graph(
    src: &str,
    layers: &[Vec<String>],
    files: &[(String, String)],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let layer_of = |m: &str| layers.iter().position(|l| l.iter().any(|x| x == m));
    let modules: Vec<String> = layers.concat();
    let mut graph: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for (path, text) in files {
        let name = declared_module(path, &modules)
            .unwrap_or_else(|| panic!("{src}: `{path}` is in no declared layer of {src}/lib.rs"));
        let own = layer_of(&name).unwrap();
        let imports = crate_imports(text, path, &modules);
        let edges = graph.entry(name.clone()).or_default();
        for import in imports {
            if import == name {
                continue;
            }
            let theirs = layer_of(&import).unwrap();
            assert!(
                theirs <= own,
                "{src}: `{path}` (layer {}) imports `{import}` from layer {}: a module may import \
                 only from its own layer or the layers declared before it in {src}/lib.rs",
                own + 1,
                theirs + 1
            );
            if !edges.contains(&import) {
                edges.push(import);
            }
        }
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan).
fn cycles(graph: &std::collections::BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a std::collections::BTreeMap<String, Vec<String>>,
        index: std::collections::BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        w.index.insert(v, (w.next, w.next));
        w.next += 1;
        w.stack.push(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.index[v].1.min(w.index[u].1);
                w.index.get_mut(v).unwrap().1 = low;
            } else if w.stack.contains(&u) {
                let low = w.index[v].1.min(w.index[u].0);
                w.index.get_mut(v).unwrap().1 = low;
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let mut group = Vec::new();
            while let Some(u) = w.stack.pop() {
                group.push(u.to_owned());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                w.out.push(group);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: std::collections::BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

#[test]
fn core_modules_import_only_downward_without_cycles() {
    check_layers("shared/core/src", &[]);
}

#[test]
fn secret_filter_modules_import_only_downward_without_cycles() {
    check_layers("shared/secrets/src", &[]);
}

#[test]
fn the_layer_check_reads_declarations_and_imports() {
    let lib = "//! Doc.\n//!\n//! # Layers\n//!\n//! 1. Base: `a`,\n//!    `b`.\n//! 2. Top: `c`.\n";
    assert_eq!(
        declared_layers(lib),
        [vec!["a".to_owned(), "b".to_owned()], vec!["c".to_owned()]]
    );
    let modules = ["a", "b", "c"].map(str::to_owned);
    let src = "use crate::{a::X, c};\n/// [`crate::b`]\nfn f() { crate::b::g() }\n#[cfg(test)]\nmod t {}\n";
    let got: Vec<String> = crate_imports(src, "c", &modules).into_iter().collect();
    assert_eq!(got, ["a", "b", "c"]);
    let graph = [("a", vec!["b"]), ("b", vec!["a"]), ("c", vec!["a"])]
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
        .into();
    assert_eq!(cycles(&graph), [vec!["a".to_owned(), "b".to_owned()]]);
}

#[test]
fn the_layer_check_follows_nested_module_paths() {
    // Declared: files in folders (`base::text`), and a folder taken whole (`top`).
    let layers: Vec<Vec<String>> = [
        vec!["base::text", "base::files"],
        vec!["mid::plan"],
        vec!["hosts::a", "hosts::b", "hosts", "top"],
    ]
    .map(|l| l.into_iter().map(str::to_owned).collect())
    .into();
    let modules: Vec<String> = layers.concat();
    // Nested groups, `self`, a rename, `super::` from a file in a folder, and a path through a
    // child module from the folder's `mod.rs`.
    let src = "use crate::{base::{self, text::Style}, mid::plan::Plan as P};\nuse super::b::X;\nfn f() { crate::top::inner::g(); }\n";
    let got: Vec<String> = crate_imports(src, "hosts::a", &modules).into_iter().collect();
    assert_eq!(got, ["base::text", "hosts::b", "mid::plan", "top"]);
    let got: Vec<String> = crate_imports("fn f() { a::run(); b::run() }\n", "hosts", &modules)
        .into_iter()
        .collect();
    assert_eq!(got, ["hosts::a", "hosts::b"]);
    // `super::` from a folder's file reaches the folder's `mod.rs` when no sibling is named.
    let got: Vec<String> = crate_imports("use super::{helper, a};\n", "hosts::b", &modules)
        .into_iter()
        .collect();
    assert_eq!(got, ["hosts", "hosts::a"]);

    let file = |p: &str, t: &str| (p.to_owned(), t.to_owned());
    // Downward and same-layer imports pass; a folder's files count as the folder.
    let ok = [
        file("base::text", ""),
        file("base::files", "use crate::base::text;\n"),
        file("mid::plan", "use crate::base::files::F;\n"),
        file("hosts::a", "use crate::mid::plan::Plan;\n"),
        file("hosts", "fn f() { a::run() }\n"),
        file("top::x", "use crate::hosts::a;\n"),
        file("top::y", "use super::x;\n"),
    ];
    let graph = import_graph("demo", &layers, &ok);
    assert_eq!(graph["hosts"], ["hosts::a"]);
    assert_eq!(graph["top"], ["hosts::a"]);
    assert!(cycles(&graph).is_empty());
    // An upward import from a nested file fails, naming it.
    let up = [
        file("base::text", ""),
        file("mid::plan", "use crate::hosts::b::Y;\n"),
    ];
    let err = std::panic::catch_unwind(|| import_graph("demo", &layers, &up)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("`mid::plan` (layer 2) imports `hosts::b` from layer 3"),
        "{msg}"
    );
    // So does a file in no declared layer.
    let stray = [file("extra::z", "")];
    assert!(std::panic::catch_unwind(|| import_graph("demo", &layers, &stray)).is_err());
    // A cycle through a folder's `mod.rs` and its child is seen.
    let cyclic = [
        file("hosts", "fn f() { a::run() }\n"),
        file("hosts::a", "use super::helper;\n"),
    ];
    let graph = import_graph("demo", &layers, &cyclic);
    assert_eq!(cycles(&graph), [vec!["hosts".to_owned(), "hosts::a".to_owned()]]);
}

#[test]
fn cli_modules_import_only_downward_without_cycles() {
    check_layers("bins/cli/src", &[]);
}

/// The layers drawn under `heading` in docs/architecture.md: (number, module words).
fn drawn_layers(heading: &str) -> Vec<(usize, Vec<String>)> {
    let page = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let drawing = page
        .split_once(heading)
        .and_then(|(_, r)| r.split_once("```text\n"))
        .and_then(|(_, r)| r.split_once("```"))
        .map(|(d, _)| d)
        .unwrap_or_else(|| panic!("a drawing of the layers under `{heading}` in docs/architecture.md"));
    let mut drawn: Vec<(usize, Vec<String>)> = drawing
        .lines()
        .filter_map(|l| {
            // `N  title  modules…`: the title and the modules are apart by two blanks or more.
            let (n, rest) = l.split_once(' ')?;
            let (_, modules) = rest.trim_start().split_once("  ")?;
            let words: Vec<String> = modules.split_whitespace().map(str::to_owned).collect();
            Some((n.parse().ok()?, words))
        })
        .collect();
    drawn.sort_by_key(|(n, _)| *n);
    drawn
}

#[test]
fn the_architecture_page_draws_the_declared_secret_filter_layers() {
    let lib_rs = std::fs::read_to_string(root().join("shared/secrets/src/lib.rs")).unwrap();
    let declared = declared_layers(&lib_rs);
    let drawn = drawn_layers("## Secret filter layers");
    assert_eq!(drawn.len(), declared.len(), "{drawn:?}");
    for ((n, words), layer) in drawn.iter().zip(&declared) {
        assert_eq!(words, layer, "layer {n} of docs/architecture.md");
    }
}

#[test]
fn the_architecture_page_draws_the_declared_cli_layers() {
    let lib_rs = std::fs::read_to_string(root().join("bins/cli/src/lib.rs")).unwrap();
    let declared = declared_layers(&lib_rs);
    let drawn = drawn_layers("## CLI layers");
    assert_eq!(drawn.len(), declared.len(), "{drawn:?}");
    for ((n, words), layer) in drawn.iter().zip(&declared) {
        // Drawn by their last name (`codex` for `hosts::codex`): the title names the folder.
        let names: Vec<&str> = layer.iter().map(|m| m.rsplit("::").next().unwrap()).collect();
        assert_eq!(words, &names, "CLI layer {n} of docs/architecture.md");
    }
}

#[test]
fn the_architecture_page_draws_the_declared_core_layers() {
    let lib_rs = std::fs::read_to_string(root().join("shared/core/src/lib.rs")).unwrap();
    let declared = declared_layers(&lib_rs);
    let drawn = drawn_layers("## Layers");
    assert_eq!(drawn.len(), declared.len(), "{drawn:?}");
    for ((n, words), layer) in drawn.iter().zip(&declared) {
        assert_eq!(words, layer, "layer {n} of docs/architecture.md");
    }
}

/// Every Rust file the repository tracks under its source folders, relative to the root.
fn every_rust_file() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() && name != "node_modules" && name != "target" {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root()).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    for top in ["bins", "shared", "src", "tests", "benches", "installers"] {
        walk(&root().join(top), &mut out);
    }
    out.sort();
    out
}

#[test]
fn every_module_opens_with_a_line_on_what_it_owns() {
    let files = every_rust_file();
    assert!(files.len() > 60, "found only {} Rust files", files.len());
    let bare: Vec<&String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(root().join(f)).unwrap();
            !text.starts_with("//!")
        })
        .collect();
    assert!(bare.is_empty(), "modules without a `//!` line first: {bare:?}");
}

/// Every hook executable of the release build (`make test` builds it first) is at most 3 MB,
/// decimal: what a host starts on every prompt stays small, however the limit is read.
#[test]
fn every_release_hook_executable_is_at_most_3_mb() {
    let hooks: Vec<&str> = powercontext_hooks_core::host::HOSTS
        .iter()
        .map(|h| h.hook_exe)
        .collect();
    assert!(hooks.len() >= 13, "{hooks:?}");
    let over: Vec<(String, u64)> = hooks
        .iter()
        .map(|exe| {
            let p = crate::support::release_exe(exe);
            (exe.to_string(), std::fs::metadata(p).unwrap().len())
        })
        .filter(|(_, len)| *len > 3_000_000)
        .collect();
    assert!(over.is_empty(), "over 3,000,000 bytes: {over:?}");
}

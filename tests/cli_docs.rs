//! Holds `--help`, the README and docs/cli.md together: the README's command table names exactly
//! the visible subcommands, docs/cli.md's section for each command names exactly its flags, every
//! exit code in docs/cli.md's table is the one its example really gives, `--json` is described
//! one way, and the README's host matrix has one row and one page per host `setup` accepts.
//! Everything is read from the real CLI's help, so a new command, flag or host fails here until
//! the docs name it.

use std::collections::BTreeSet;

use crate::support::run_cli;

const README: &str = include_str!("../README.md");
const CLI_PAGE: &str = include_str!("../docs/cli.md");

fn help(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--help");
    let out = run_cli(&all, &[]);
    assert!(
        out.status.success(),
        "{all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The visible subcommands, from the top-level help's `Commands:` block.
fn commands() -> Vec<String> {
    let top = help(&[]);
    let block = top.split_once("Commands:\n").expect("a Commands block").1;
    block
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags a help text offers (without `--help`).
fn help_flags(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            l.split(|c: char| c.is_whitespace() || c == ',')
                .find(|w| w.starts_with("--"))
        })
        .filter(|f| *f != "--help")
        .map(str::to_owned)
        .collect()
}

/// Every `--flag` written in a piece of markdown, except inside a code span that is another
/// program's command line (`dsh --profile <p> --dump-config`): those flags are that program's.
fn doc_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (n, piece) in text.split('`').enumerate() {
        let code = n % 2 == 1;
        if code {
            let first = piece.split_whitespace().next().unwrap_or("");
            if !first.starts_with("--") && first != "powercontext-hooks" {
                continue;
            }
        }
        for (i, _) in piece.match_indices("--") {
            let name: String = piece[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            let before = piece[..i].chars().next_back();
            if name.len() > 1
                && !name.starts_with('-')
                && before.is_none_or(|c| !c.is_alphanumeric() && c != '-')
            {
                out.insert(format!("--{}", name.trim_end_matches('-')));
            }
        }
    }
    out
}

/// docs/cli.md's section whose heading names `command` in backticks (or, for a title that is
/// not a command, names it as it is).
fn section(command: &str) -> &'static str {
    let needle = if command.contains(' ') {
        command.to_owned()
    } else {
        format!("`{command}`")
    };
    let start = CLI_PAGE
        .match_indices("\n## ")
        .find(|(i, _)| {
            CLI_PAGE[i + 1..]
                .lines()
                .next()
                .is_some_and(|h| h.contains(&needle))
        })
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("docs/cli.md has no section for `{command}`"));
    let end = CLI_PAGE[start + 3..]
        .find("\n## ")
        .map_or(CLI_PAGE.len(), |e| start + 3 + e);
    &CLI_PAGE[start..end]
}

#[test]
fn the_readme_command_table_names_exactly_the_visible_subcommands() {
    let listed: BTreeSet<String> = README
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1))
        .filter(|c| !c.contains(' ') && !c.starts_with("powercontext-hook"))
        .map(str::to_owned)
        .collect();
    let real: BTreeSet<String> = commands().into_iter().collect();
    assert!(real.contains("setup") && real.contains("package") && real.contains("statusline"));
    assert_eq!(
        listed, real,
        "README's command table against `powercontext-hooks --help`"
    );
}

#[test]
fn docs_cli_names_exactly_each_commands_flags() {
    for command in commands() {
        let real = help_flags(&help(&[&command]));
        let documented = doc_flags(section(&command));
        let missing: Vec<_> = real.difference(&documented).collect();
        let unknown: Vec<_> = documented.difference(&real).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "docs/cli.md `{command}`: flags in --help but not documented {missing:?}, documented but not in --help {unknown:?}"
        );
    }
}

#[test]
fn every_json_flag_is_described_the_same_way() {
    let mut descriptions = BTreeSet::new();
    for command in commands() {
        for line in help(&[&command]).lines() {
            if let Some(rest) = line.trim_start().strip_prefix("--json") {
                descriptions.insert(rest.trim().to_owned());
            }
        }
    }
    assert_eq!(
        descriptions,
        BTreeSet::from(["One JSON object on stdout instead of text".to_owned()]),
    );
    assert!(CLI_PAGE.contains("prints one JSON object on stdout instead of text"));
}

#[test]
fn a_host_argument_lists_the_hosts_once() {
    for command in ["setup", "uninstall"] {
        let text = help(&[command]);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("<HOST>"))
            .unwrap_or_else(|| panic!("{command}: no <HOST> line"));
        assert_eq!(line.matches("claude-code").count(), 1, "{line}");
    }
}

#[test]
fn each_documented_exit_code_is_what_its_example_gives() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_string_lossy().into_owned();
    let rows: Vec<(i32, String)> = section("Exit codes")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let code = cells[0]
                .trim_start_matches("| ")
                .trim_matches('`')
                .parse()
                .unwrap();
            let example = cells.last().unwrap().trim_end_matches(" |").trim_matches('`');
            (code, example.to_owned())
        })
        .collect();
    assert_eq!(
        rows.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        [0, 1, 2],
        "{rows:?}"
    );
    for (code, example) in rows {
        let args: Vec<&str> = example
            .strip_prefix("powercontext-hooks ")
            .unwrap_or_else(|| panic!("{example}"))
            .split_whitespace()
            .collect();
        let out = run_cli(
            &args,
            &[
                ("HOME", &h),
                ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
                ("XDG_STATE_HOME", &format!("{h}/state")),
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "`{example}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The README's short form says the same.
    let readme = README.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("Exit codes: `0` done, `1` refused or something is wrong (with the reason and its fix), `2` the command line is wrong."),
        "README's exit codes"
    );
}

#[test]
fn the_host_matrix_has_one_row_and_one_page_per_host() {
    let text = help(&["setup"]);
    let values = text
        .split_once("[possible values: ")
        .and_then(|(_, r)| r.split_once(']'))
        .map(|(v, _)| v)
        .expect("setup's possible hosts");
    let hosts: BTreeSet<String> = values.split(", ").map(str::to_owned).collect();
    assert!(hosts.len() >= 5, "{hosts:?}");
    let rows: Vec<&str> = README
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("](docs/hosts/"))
        .collect();
    let linked: BTreeSet<String> = rows
        .iter()
        .filter_map(|l| l.split_once("](docs/hosts/"))
        .filter_map(|(_, r)| r.split_once(".md)"))
        .map(|(h, _)| h.to_owned())
        .collect();
    assert_eq!(linked, hosts, "README host matrix rows against `setup --help`");
    let root = env!("CARGO_MANIFEST_DIR");
    for host in &hosts {
        let page = std::fs::read_to_string(format!("{root}/docs/hosts/{host}.md"))
            .unwrap_or_else(|e| panic!("docs/hosts/{host}.md: {e}"));
        // The journey, in order: setup, a memory added with our CLI for this host's scope (no raw
        // request), status, doctor, uninstall of this very host.
        assert!(
            !page.contains("/v1/memory/remember"),
            "docs/hosts/{host}.md: a raw request"
        );
        let remember = if host == "claude-code" {
            "powercontext-hooks remember ".to_owned()
        } else {
            format!("powercontext-hooks remember --host {host} ")
        };
        let mut at = 0;
        for step in [
            format!("powercontext-hooks setup {host}"),
            remember,
            "powercontext-hooks status".to_owned(),
            format!("powercontext-hooks doctor {host}"),
            format!("powercontext-hooks uninstall {host}"),
        ] {
            let found = page[at..]
                .find(&step)
                .unwrap_or_else(|| panic!("docs/hosts/{host}.md lacks `{step}` after the steps before it"));
            at += found;
        }
    }
    // Every row says its evidence in one of the matrix's words.
    for row in rows {
        assert!(
            row.contains("real host, E2E") || row.contains("Not validated in a real host"),
            "{row}"
        );
    }
}

#[test]
fn the_demo_adds_its_memory_with_the_cli_and_says_what_it_is_doing() {
    let demo = include_str!("../scripts/demo");
    assert!(
        !demo.contains("/v1/memory/remember"),
        "the demo posts a raw request"
    );
    assert!(demo.contains("cli remember "), "the demo remembers with our CLI");
    // Every slow step is announced before it starts.
    for step in ["ensure-server-venv", "cargo build", "server run"] {
        let at = demo.find(step).unwrap_or_else(|| panic!("{step}"));
        let before = &demo[..at];
        assert!(
            before
                .rfind("echo \"==>")
                .is_some_and(|e| before[e..].lines().count() <= 3),
            "no progress line right before `{step}`"
        );
    }
}

/// docs/operations.md, the README's explicit-operations table and `op --help` against the
/// operations table the CLI runs (`op --list --json`): every operation's row (tool, method, path,
/// whether it mutates), every error code, every host.
#[test]
fn the_operations_page_and_help_match_the_operations_table() {
    const OPS_PAGE: &str = include_str!("../docs/operations.md");
    let out = run_cli(&["op", "--list", "--json"], &[]);
    assert!(out.status.success());
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let op_help = help(&["op"]);
    let rows: Vec<&str> = OPS_PAGE.lines().filter(|l| l.starts_with("| `")).collect();
    for o in t["operations"].as_array().unwrap() {
        let name = o["name"].as_str().unwrap();
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("docs/operations.md has no row for {name}"));
        let call = format!(
            "{} `{}`",
            o["method"].as_str().unwrap(),
            o["path"].as_str().unwrap()
        );
        assert!(row.contains(&call), "{name}: {row} lacks {call}");
        assert!(
            row.contains(&format!("`{}`", o["tool"].as_str().unwrap())),
            "{row}"
        );
        let mutates = if o["mutates"] == true { "| yes |" } else { "| no |" };
        assert!(row.contains(mutates), "{name}: {row}");
        for arg in o["args_required"].as_array().unwrap() {
            assert!(
                row.contains(&format!("`{}`", arg.as_str().unwrap())),
                "{name}: {row}"
            );
        }
        let shown = if o["mutates"] == true {
            format!("{name}*")
        } else {
            name.to_owned()
        };
        assert!(op_help.contains(&shown), "op --help lacks {shown}");
    }
    let documented = rows.iter().filter(|r| r.contains("| `pc_")).count();
    assert_eq!(
        documented,
        t["operations"].as_array().unwrap().len(),
        "docs/operations.md rows"
    );
    for code in t["codes"].as_array().unwrap() {
        let code = code.as_str().unwrap();
        assert!(
            OPS_PAGE.contains(&format!("| `{code}` |")),
            "docs/operations.md lacks {code}"
        );
        assert!(op_help.contains(code), "op --help lacks {code}");
    }
    for off in t["off_model_surface"].as_array().unwrap() {
        assert!(OPS_PAGE.contains(off.as_str().unwrap()), "{off}");
    }
    // The README's table has one row per host.
    let readme = README
        .split_once("## Explicit operations")
        .expect("README section")
        .1;
    for host in [
        "| Pi |",
        "| OpenCode |",
        "| DSH |",
        "| Claude Code |",
        "| Codex CLI |",
    ] {
        assert!(
            readme.split_once("\n## ").unwrap().0.contains(host),
            "README lacks {host}"
        );
    }
}

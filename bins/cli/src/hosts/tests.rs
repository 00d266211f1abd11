//! Unit tests of the host installers' pure parts: plans built against a temporary HOME and state
//! directory (nothing written), listings parsed from host CLI output, doctor's verdicts on
//! prepared trees. They never run a host CLI or touch the network.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::{codex, dsh, installer, marketplace, opencode, pi};
use crate::installer::checks::{Report, Status};
use crate::installer::plan::{Action, Plan, SetupArgs, Step};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, HostExt, Manifest, OwnedFile, Registrations, digest};
use crate::support::paths::{Locate, Paths};

/// A temporary tree: `home/`, `state/`, `bin/` (fake hook executables), removed on drop.
struct Tree(PathBuf);

/// Tells trees of the same name apart: tests run in parallel threads of one process, and two
/// tests naming their tree after the same host would otherwise remove each other's files.
static TREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Tree {
    fn new(name: &str) -> Self {
        let n = TREES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("pc-hosts-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("bin")).unwrap();
        for host in Host::ALL {
            let exe = root.join("bin").join(host.hook_exe());
            fs::write(&exe, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        }
        Self(root)
    }

    fn paths(&self) -> Paths {
        Paths {
            env: Env::from_pairs([("HOME", self.0.join("home").display().to_string())]),
            state_root: self.0.join("state"),
            config_path: Some(self.0.join("config.toml")),
            bin_dir: self.0.join("bin"),
        }
    }

    /// Our part of setup's plan, with a host CLI that is never run.
    fn plan(&self, args: &SetupArgs) -> anyhow::Result<Plan> {
        let cli = HostCli {
            host: args.host,
            path: self.0.join("no-such-cli"),
        };
        let version = args.host.tested_versions()[0].to_owned();
        crate::commands::setup::plan_ours(args, args.host, &self.paths(), || Ok((cli, version)))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn args(host: Host) -> SetupArgs {
    SetupArgs {
        host,
        profile: None,
        server_url: None,
        token_env: None,
        token_file: None,
        capture_prompts: None,
        locate: Locate {
            bin_dir: None,
            host_cli: None,
        },
        statusline: false,
        take_over: false,
        trust_only: false,
        dry_run: true,
        json: false,
    }
}

#[test]
fn each_hosts_plan_renders_its_templates_into_its_plugin_folder_and_writes_nothing() {
    for host in [Host::ClaudeCode, Host::Codex, Host::Pi, Host::Dsh] {
        let tree = Tree::new(host.as_str());
        let plan = tree.plan(&args(host)).unwrap();
        let dir = tree.0.join("state/installs").join(host.as_str()).join("plugin");
        assert_eq!(plan.plugin_dir, dir);
        let rels: Vec<&str> = installer(host).templates().iter().map(|(r, _)| *r).collect();
        let planned: Vec<PathBuf> = plan.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            planned,
            rels.iter().map(|r| dir.join(r)).collect::<Vec<_>>(),
            "{host}"
        );
        for f in &plan.files {
            assert_eq!(
                (f.action, f.private),
                (Action::Create, false),
                "{}",
                f.path.display()
            );
            let text = String::from_utf8(f.bytes.clone()).unwrap();
            assert!(!text.contains("{{"), "{}", f.path.display());
        }
        let hooks = plan.files.iter().find(|f| f.path.ends_with("hooks/hooks.json"));
        if let Some(f) = hooks {
            // The host runs setup's own copy, not the executable in the bin folder.
            let exe = crate::support::exe_copy::installed_path(&tree.0.join("state"), host);
            assert!(String::from_utf8_lossy(&f.bytes).contains(&*exe.display().to_string()));
        }
        assert!(plan.config.is_none() && plan.steps.is_empty() && plan.host_entry.is_none());
        assert_eq!(plan.profile.as_deref(), (host == Host::Dsh).then_some("web"));
        assert!(!tree.0.join("state").exists(), "a plan writes nothing");
    }
}

#[test]
fn claude_code_and_codex_plans_give_the_mcp_server_our_headers_helper() {
    for (host, field) in [
        (Host::ClaudeCode, "headersHelper"),
        (Host::Codex, "http_headers_helper"),
    ] {
        let tree = Tree::new(&format!("{}-mcp", host.as_str()));
        let plan = tree.plan(&args(host)).unwrap();
        let mcp = plan.files.iter().find(|f| f.path.ends_with(".mcp.json")).unwrap();
        let v: Value = serde_json::from_slice(&mcp.bytes).unwrap();
        let helper = v["mcpServers"]["powercontext"][field].as_str().unwrap();
        let wanted = format!(" mcp-headers {} --config ", host.as_str());
        assert!(helper.contains(&wanted), "{helper}");
    }
}

#[test]
fn a_token_and_url_go_to_our_config_file_owner_only_and_never_into_the_plan_text() {
    let tree = Tree::new("config");
    let token = tree.0.join("token");
    fs::write(&token, "sk-test-secret-0123456789\n").unwrap();
    let mut a = args(Host::Pi);
    a.server_url = Some("http://127.0.0.1:9".to_owned());
    a.token_file = Some(token);
    let plan = tree.plan(&a).unwrap();
    let (f, owned) = plan.config.as_ref().unwrap();
    assert_eq!(f.path, tree.0.join("config.toml"));
    assert_eq!((f.action, f.private), (Action::Create, true));
    let keys: Vec<&str> = owned.keys.keys().map(String::as_str).collect();
    assert_eq!(keys, ["authorization", "server_url"]);
    assert!(String::from_utf8_lossy(&f.bytes).contains("[hosts.pi]"));
    assert!(!plan.settings_lines.iter().any(|r| r.value.contains("sk-test")));
    assert!(!tree.0.join("config.toml").exists());
}

#[test]
fn a_same_name_file_we_do_not_own_is_refused_and_our_own_bytes_are_kept() {
    let tree = Tree::new("foreign");
    let plan = tree.plan(&args(Host::Dsh)).unwrap();
    let first = &plan.files[0];
    fs::create_dir_all(first.path.parent().unwrap()).unwrap();
    fs::write(&first.path, &first.bytes).unwrap();
    let again = tree.plan(&args(Host::Dsh)).unwrap();
    assert_eq!(again.files[0].action, Action::Keep);
    fs::write(&first.path, b"someone else's\n").unwrap();
    let err = tree.plan(&args(Host::Dsh)).err().unwrap().to_string();
    assert!(
        err.contains("refusing to overwrite") && err.contains("package.json"),
        "{err}"
    );
    assert_eq!(fs::read(&first.path).unwrap(), b"someone else's\n");
}

#[test]
fn profiles_and_the_status_line_are_refused_for_hosts_without_them() {
    let tree = Tree::new("flags");
    let mut a = args(Host::Pi);
    a.profile = Some("web".to_owned());
    assert!(
        tree.plan(&a)
            .err()
            .unwrap()
            .to_string()
            .contains("--profile is for dsh only")
    );
    let mut a = args(Host::Dsh);
    a.profile = Some("../x".to_owned());
    assert!(
        tree.plan(&a)
            .err()
            .unwrap()
            .to_string()
            .contains("a DSH profile name")
    );
    let mut a = args(Host::Codex);
    a.statusline = true;
    assert!(
        tree.plan(&a)
            .err()
            .unwrap()
            .to_string()
            .contains("--statusline is for claude-code only")
    );
}

#[test]
fn dsh_plans_add_unless_the_profile_links_our_folder_and_refuses_another_package() {
    let tree = Tree::new("dsh");
    let (paths, a) = (tree.paths(), args(Host::Dsh));
    let host_plan = |a: &SetupArgs| {
        let mut plan = tree.plan(a)?;
        installer(Host::Dsh).plan(a, &paths, &mut plan)?;
        anyhow::Ok(plan)
    };
    let plan = host_plan(&a).unwrap();
    assert_eq!(plan.steps, [Step::Install]);
    let dir = plan.plugin_dir.display().to_string();
    let add = ["plugin", "--profile", "web", "add", dir.as_str()];
    assert_eq!(installer(Host::Dsh).commands(&plan, Step::Install), [add]);
    let profile = tree.0.join("home/.dsh/profiles/web");
    fs::create_dir_all(&profile).unwrap();
    let deps = |spec: &str| json!({"dependencies": {"powercontext-dsh": spec}}).to_string();
    fs::write(profile.join("package.json"), deps(&format!("link:{dir}"))).unwrap();
    assert!(host_plan(&a).unwrap().steps.is_empty());
    fs::write(profile.join("package.json"), deps("link:/elsewhere")).unwrap();
    let err = host_plan(&a).err().unwrap().to_string();
    assert!(err.contains("not ours") && err.contains("--take-over"), "{err}");
    let mut take = args(Host::Dsh);
    take.take_over = true;
    let plan = host_plan(&take).unwrap();
    assert_eq!(plan.steps, [Step::Replace, Step::Install]);
    assert!(plan.warnings.iter().any(|w| w.contains("taking over")));
}

#[test]
fn opencode_mcp_entry_is_created_kept_when_ours_and_refused_when_not() {
    let tree = Tree::new("opencode");
    let config = tree.0.join("home/.config/opencode");
    let want = json!({"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": true});
    let (change, kept) = opencode::plan_mcp(&config, &want, None).unwrap();
    let (f, entry) = change.unwrap();
    assert_eq!(
        (f.path.clone(), f.action, kept),
        (config.join("opencode.json"), Action::Create, None)
    );
    assert!(entry.created_file && entry.member() == "mcp.powercontext");
    fs::create_dir_all(&config).unwrap();
    fs::write(&f.path, &f.bytes).unwrap();
    let mut m = manifest(Host::OpenCode, &tree.0, Vec::new());
    m.host_entry = Some(entry.clone());
    let (change, kept) = opencode::plan_mcp(&config, &want, Some(&m)).unwrap();
    assert!(change.is_none() && kept == Some(entry));
    let err = opencode::plan_mcp(&config, &want, None)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("refusing to overwrite `mcp.powercontext`"), "{err}");
    // An `mcp` that is not an object: the error names the file to fix, not only the key.
    fs::write(&f.path, "{\"mcp\": \"x\"}\n").unwrap();
    let err = format!("{:#}", opencode::plan_mcp(&config, &want, None).err().unwrap());
    assert!(
        err.contains(&f.path.display().to_string()) && err.contains("`mcp` is not an object"),
        "{err}"
    );
}

#[test]
fn opencode_file_references_refuse_paths_its_substitution_would_cut() {
    assert_eq!(
        opencode::file_reference(Path::new("/home/u/.local/state/x/mcp-authorization")).unwrap(),
        "{file:/home/u/.local/state/x/mcp-authorization}"
    );
    for bad in ["/a}b/f", "/a{b/f", "/a\"b/f", "/a\\b/f", "/a\nb/f"] {
        assert!(opencode::file_reference(Path::new(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn claude_code_keeps_a_status_line_the_user_has() {
    let tree = Tree::new("statusline");
    let settings = tree.0.join("settings.json");
    let want = json!({"type": "command", "command": "pc statusline"});
    let mut warnings = Vec::new();
    let (change, _) = super::claude_code::plan_statusline(&settings, &want, None, &mut warnings).unwrap();
    assert_eq!(change.unwrap().0.action, Action::Create);
    fs::write(
        &settings,
        r#"{"statusLine": {"type": "command", "command": "mine"}}"#,
    )
    .unwrap();
    let planned = super::claude_code::plan_statusline(&settings, &want, None, &mut warnings).unwrap();
    assert!(planned.0.is_none() && planned.1.is_none());
    assert!(warnings[0].contains("already has a status line"), "{warnings:?}");
}

#[test]
fn marketplace_steps_follow_what_the_host_lists() {
    let tree = Tree::new("market");
    let mut plan = tree.plan(&args(Host::ClaudeCode)).unwrap();
    let ours = plan.plugin_dir.clone();
    let steps =
        |plan: &mut Plan, found: Option<&Path>, take| marketplace::marketplace_steps(plan, found, take);
    assert_eq!(steps(&mut plan, None, false).unwrap(), [Step::Marketplace]);
    assert!(steps(&mut plan, Some(&ours), false).unwrap().is_empty());
    let err = steps(&mut plan, Some(Path::new("/other")), false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("claude plugin marketplace remove powercontext"),
        "{err}"
    );
    assert_eq!(
        steps(&mut plan, Some(Path::new("/other")), true).unwrap(),
        [Step::Replace, Step::Marketplace]
    );
    use marketplace::plugin_step;
    assert_eq!(plugin_step(None, false, false), Some(Step::Install));
    assert_eq!(plugin_step(Some(true), true, false), Some(Step::Install));
    assert_eq!(plugin_step(Some(true), false, true), Some(Step::Install));
    assert_eq!(plugin_step(Some(false), false, false), Some(Step::Enable));
    assert_eq!(plugin_step(Some(true), false, false), None);
}

#[test]
fn pi_and_dsh_listings_are_read_from_their_cli_output() {
    let tree = Tree::new("pi");
    let (ours, official) = (tree.0.join("ours"), tree.0.join("official"));
    fs::create_dir_all(&official).unwrap();
    fs::write(official.join("package.json"), r#"{"name": "powercontext-pi"}"#).unwrap();
    let listing = format!(
        "User packages:\n  {0}\n    {0}\n  {1}\n    {1}\nProject packages:\n    /p\n",
        ours.display(),
        official.display()
    );
    assert!(pi::listed(&listing, &ours) && !pi::listed(&listing, Path::new("/p")));
    assert_eq!(pi::others(&listing, &ours), std::slice::from_ref(&official));
    assert!(pi::others(&listing, &official).is_empty());
    assert!(dsh::has_plugin_row("plugins:\n  - id: 'powercontext-dsh'\n"));
    assert!(!dsh::has_plugin_row("plugins:\n  - id: powercontext-dsh-old\n"));
}

fn manifest(host: Host, root: &Path, files: Vec<OwnedFile>) -> Manifest {
    Manifest {
        executable: None,
        schema: 1,
        owner: "powercontext-hooks".to_owned(),
        host: host.as_str().to_owned(),
        version: "0".to_owned(),
        plugin_dir: root.join("plugin"),
        hook_exe: root.join("bin").join(host.hook_exe()),
        files,
        config: None,
        registrations: Registrations::default(),
        host_entry: None,
        profile: None,
        host_settings: None,
        shared: crate::support::install::OwnedShared::default(),
        created_dirs: Vec::new(),
        settings_hooks: None,
    }
}

/// (name, status) of each line doctor reported.
fn lines(r: &Report) -> Vec<(&str, Status)> {
    r.checks.iter().map(|c| (c.name, c.status)).collect()
}

#[test]
fn doctor_installed_tier_tells_ours_from_missing_changed_and_the_official_install() {
    let tree = Tree::new("doctor");
    let paths = tree.paths();
    let check = || {
        let mut r = Report::default();
        crate::commands::doctor::check_installed(Host::Pi, &paths, "setup", &mut r);
        r
    };
    let r = check();
    assert_eq!(
        lines(&r),
        [
            ("ownership manifest", Status::Fail),
            ("hook executable", Status::Ok)
        ]
    );
    assert_eq!(r.checks[0].detail, "not set up by powercontext-hooks");
    let clients = tree.0.join("home/.config/powercontext/clients.json");
    fs::create_dir_all(clients.parent().unwrap()).unwrap();
    fs::write(&clients, r#"{"version": 1, "hosts": {"pi": {}}}"#).unwrap();
    assert_eq!(
        check().checks[0].status,
        Status::Warn,
        "the official install is checked as found"
    );
    let file = tree.0.join("plugin/package.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "ours").unwrap();
    let owned = OwnedFile {
        path: file.clone(),
        sha256: digest(b"ours"),
    };
    let m = manifest(Host::Pi, &tree.0, vec![owned]);
    install::ensure_install_dirs(&paths.state_root, Host::Pi).unwrap();
    let path = install::manifest_path(&paths.state_root, Host::Pi);
    fs::write(&path, install::manifest_bytes(&m).unwrap()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let ok = [
        ("ownership manifest", Status::Ok),
        ("plugin files", Status::Ok),
        ("hook executable", Status::Ok),
    ];
    assert_eq!(lines(&check()), ok);
    fs::write(&file, "changed").unwrap();
    let r = check();
    assert_eq!(lines(&r)[1], ("plugin files", Status::Fail));
    assert!(r.checks[1].detail.contains("missing or changed"));
}

#[test]
fn doctor_activation_verdicts_from_what_the_host_lists() {
    let tree = Tree::new("activation");
    let m = manifest(Host::Codex, &tree.0, Vec::new());
    let listing = |enabled, found: Option<PathBuf>, m: Option<&Manifest>| {
        let mut r = Report::default();
        marketplace::check_listing(
            Host::Codex,
            Ok(enabled),
            Ok(found),
            m,
            ("enable", "setup"),
            &mut r,
        );
        r.checks.iter().map(|c| c.status).collect::<Vec<_>>()
    };
    assert_eq!(
        listing(Some(true), Some(m.plugin_dir.clone()), Some(&m)),
        [Status::Ok, Status::Ok]
    );
    assert_eq!(listing(Some(false), None, Some(&m)), [Status::Fail, Status::Fail]);
    assert_eq!(
        listing(None, Some("/other".into()), None),
        [Status::Fail, Status::Warn]
    );
    assert_eq!(
        listing(Some(true), Some("/other".into()), Some(&m)),
        [Status::Ok, Status::Fail]
    );
    let hooks = |hooks: Value, ours| {
        let mut r = Report::default();
        let hooks = serde_json::from_value(hooks).map_err(anyhow::Error::from);
        codex::check_hooks(hooks, Some("/bin/hook"), ours, "setup", &mut r);
        r
    };
    let trusted = json!([{"command": "/bin/hook", "trustStatus": "trusted"}]);
    assert_eq!(
        lines(&hooks(trusted.clone(), true)),
        [("hook loaded", Status::Ok), ("hook trusted", Status::Ok)]
    );
    assert_eq!(lines(&hooks(json!([]), true)), [("hook loaded", Status::Fail)]);
    let r = hooks(
        json!([{"command": "/old/hook", "trustStatus": "untrusted"}]),
        false,
    );
    assert_eq!(
        lines(&r),
        [("hook loaded", Status::Fail), ("hook trusted", Status::Fail)]
    );
    assert!(r.checks[1].fix.as_deref().unwrap().contains("--trust-only"));
    assert!(codex::trusted_and_current(
        trusted.as_array().unwrap(),
        "/bin/hook"
    ));
    assert!(!codex::trusted_and_current(&[], "/bin/hook"));
}

#[test]
fn closed_words_print_and_serialize_as_spelled_once() {
    use crate::installer::checks::Tier;
    assert_eq!(
        json!({"tier": Tier::ServerReady, "status": Status::Warn}),
        json!({"tier": "server-ready", "status": "warn"})
    );
    assert_eq!(
        format!("[{:<7}] {}", Action::Keep, Tier::Installed),
        "[keep   ] installed"
    );
}

#[test]
fn doctor_says_a_host_config_that_no_longer_parses_is_broken_not_missing_our_entry() {
    let tree = Tree::new("doctor-entry");
    let config = tree.0.join("opencode.json");
    fs::write(&config, "{\"mcp\": {\"powercontext\": {\"url\": \"u\"}}}\n").unwrap();
    let mut m = manifest(Host::OpenCode, &tree.0, Vec::new());
    m.host_entry = Some(install::OwnedEntry {
        path: config.clone(),
        parent: "mcp".to_owned(),
        key: "powercontext".to_owned(),
        sha256: crate::support::install::value_digest(&json!({"url": "u"})),
        created_file: false,
        inserted: crate::support::jsonc::Inserted::default(),
    });
    let check = || {
        let mut r = Report::default();
        crate::commands::doctor::check_host_entry(Some(&m), "setup", &mut r);
        r
    };
    assert_eq!(lines(&check()), [("mcp entry", Status::Ok)]);
    fs::write(&config, "{\"mcp\": {").unwrap();
    let r = check();
    assert_eq!(lines(&r), [("mcp entry", Status::Fail)]);
    let (detail, fix) = (&r.checks[0].detail, r.checks[0].fix.as_deref().unwrap());
    assert!(
        detail.contains("cannot be read") && detail.contains("line 1"),
        "{detail}"
    );
    assert!(fix.starts_with(&format!("fix {}", config.display())), "{fix}");
    fs::write(&config, "{}").unwrap();
    assert!(check().checks[0].detail.contains("is missing from"));
}

#[test]
fn a_variable_that_outranks_a_flag_is_what_the_plan_shows_and_warns_about() {
    let tree = Tree::new("shadow");
    let token = tree.0.join("token");
    fs::write(&token, "sk-from-the-flag-0123456789\n").unwrap();
    let mut a = args(Host::Pi);
    a.server_url = Some("http://127.0.0.1:9".to_owned());
    a.capture_prompts = Some(false);
    a.token_file = Some(token);
    let plan_with = |vars: &[(&str, &str)]| {
        let mut paths = tree.paths();
        let home = ("HOME", tree.0.join("home").display().to_string());
        let pairs = vars.iter().map(|(k, v)| (*k, (*v).to_owned()));
        paths.env = Env::from_pairs(std::iter::once(home).chain(pairs));
        let cli = HostCli {
            host: Host::Pi,
            path: tree.0.join("no-such-cli"),
        };
        let version = Host::Pi.tested_versions()[0].to_owned();
        crate::commands::setup::plan_ours(&a, Host::Pi, &paths, || Ok((cli, version))).unwrap()
    };
    let row = |p: &Plan, name: &str| {
        let r = p.settings_lines.iter().find(|r| r.name == name).unwrap();
        (r.value.clone(), r.origin.clone())
    };
    let quiet = plan_with(&[("POWERCONTEXT_PI_SERVER_URL", "http://127.0.0.1:9")]);
    assert!(quiet.warnings.is_empty(), "the same value: {:?}", quiet.warnings);
    assert_eq!(row(&quiet, "capture_prompts").0, "off");
    let p = plan_with(&[
        ("POWERCONTEXT_PI_SERVER_URL", "http://127.0.0.1:7"),
        ("POWERCONTEXT_PI_CAPTURE_PROMPTS", "on"),
        ("POWERCONTEXT_CLIENT_API_TOKEN", "sk-from-the-env-0123456789"),
    ]);
    let env = |name: &str| format!("env `{name}`");
    assert_eq!(
        row(&p, "server_url"),
        ("http://127.0.0.1:7".to_owned(), env("POWERCONTEXT_PI_SERVER_URL"))
    );
    assert_eq!(
        row(&p, "capture_prompts"),
        ("on".to_owned(), env("POWERCONTEXT_PI_CAPTURE_PROMPTS"))
    );
    assert_eq!(row(&p, "authorization").1, env("POWERCONTEXT_CLIENT_API_TOKEN"));
    for (var, flag) in [
        ("POWERCONTEXT_PI_SERVER_URL", "--server-url"),
        ("POWERCONTEXT_PI_CAPTURE_PROMPTS", "--capture-prompts"),
        ("POWERCONTEXT_CLIENT_API_TOKEN", "the token you gave"),
    ] {
        assert!(
            p.warnings.iter().any(|w| w.contains(var) && w.contains(flag)),
            "{var}: {:?}",
            p.warnings
        );
    }
    assert!(!format!("{:?}", p.warnings).contains("sk-from"));
}

#[test]
fn every_setting_is_shown_with_its_origin() {
    use powercontext_hooks_core::config::{Layers, Settings};
    let env = Env::from_pairs([
        ("POWERCONTEXT_PI_MAX_BYTES", "700"),
        ("POWERCONTEXT_PI_HTTP_BUDGET_SECONDS", "2.5"),
        ("POWERCONTEXT_PI_FLUSH_ON_CAPTURE", "yes"),
    ]);
    let settings = Settings::resolve(&Layers {
        host: Host::Pi,
        env: &env,
        flags: None,
        file: None,
    })
    .unwrap();
    let rows = crate::support::report::setting_rows(&settings);
    let names: Vec<&str> = rows.iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "server_url",
            "authorization",
            "scope_id",
            "capture_prompts",
            "bootstrap",
            "bootstrap_max_bytes",
            "capture_secrets",
            "flush_on_capture",
            "request_timeout_seconds",
            "budget_seconds",
            "flush_max_calls",
            "max_bytes"
        ]
    );
    let row = |name: &str| {
        let r = rows.iter().find(|r| r.name == name).unwrap();
        (r.value.as_str(), r.origin.as_str())
    };
    assert_eq!(row("max_bytes"), ("700", "env `POWERCONTEXT_PI_MAX_BYTES`"));
    assert_eq!(
        row("budget_seconds"),
        ("2.5", "env `POWERCONTEXT_PI_HTTP_BUDGET_SECONDS`")
    );
    assert_eq!(
        row("flush_on_capture"),
        ("on", "env `POWERCONTEXT_PI_FLUSH_ON_CAPTURE`")
    );
    assert_eq!(row("request_timeout_seconds"), ("1", "default"));
}

#[test]
fn a_pi_settings_file_pi_cannot_parse_is_named_before_setup_runs_pi() {
    let tree = Tree::new("pi-settings");
    let agent = tree.0.join("agent");
    let env = Env::from_pairs([("PI_CODING_AGENT_DIR", agent.display().to_string())]);
    assert_eq!(pi::settings_problem(&env), None, "no file is fine");
    fs::create_dir_all(&agent).unwrap();
    let settings = agent.join("settings.json");
    fs::write(&settings, "{\"packages\": [\"/p\"]}\n").unwrap();
    assert_eq!(pi::settings_problem(&env), None);
    fs::write(&settings, "{\"packages\": [\"secret-ish\", ]}\n").unwrap();
    let problem = pi::settings_problem(&env).unwrap();
    assert!(
        problem.contains(&settings.display().to_string()) && problem.contains("line 1"),
        "{problem}"
    );
    assert!(!problem.contains("secret-ish"), "{problem}");
}

/// For every host whose plugin folder is ours alone, a link at that folder (to an empty folder
/// elsewhere) or a file there is refused with the fix, before anything is planned or written.
#[test]
fn a_plugin_folder_that_is_a_link_or_a_file_is_refused() {
    let mut checked = Vec::new();
    for host in Host::ALL {
        if host.tested_versions().is_empty() {
            continue;
        }
        let tree = Tree::new(&format!("linked-{}", host.as_str()));
        let Ok(plan) = tree.plan(&args(host)) else {
            continue; // needs its host CLI to place the folder
        };
        // A folder placed from the process's own HOME (OpenClaw) is left to the end-to-end test.
        if !installer(host).owns_plugin_dir() || !plan.plugin_dir.starts_with(&tree.0) {
            continue;
        }
        let dir = plan.plugin_dir;
        let elsewhere = tree.0.join("elsewhere");
        fs::create_dir_all(&elsewhere).unwrap();
        fs::create_dir_all(dir.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        let Err(err) = tree.plan(&args(host)) else {
            panic!("{host}: planned");
        };
        let err = format!("{err:#}");
        assert!(
            err.contains("is a symlink") && err.contains("remove"),
            "{host}: {err}"
        );
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "{host}");
        fs::remove_file(&dir).unwrap();
        fs::write(&dir, "").unwrap();
        let Err(err) = tree.plan(&args(host)) else {
            panic!("{host}: planned");
        };
        let err = format!("{err:#}");
        assert!(err.contains("is not a directory"), "{host}: {err}");
        checked.push(host);
    }
    for host in [Host::ClaudeCode, Host::Codex, Host::KimiCode] {
        assert!(checked.contains(&host), "{host} not checked: {checked:?}");
    }
}

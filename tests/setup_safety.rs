//! Setup safety with the files users really have: host and hook configs that are dotfile links
//! (edited through the link, the link kept, a rollback restoring the target's bytes and the link),
//! CRLF files and a UTF-8 byte-order mark kept, and per-host settings the user had before setup
//! put back exactly by uninstall.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::Sandbox;

const OPENCODE_CONFIG: &str = "\u{feff}{\r\n  // mine\r\n  \"model\": \"x/y\"\r\n}\r\n";
const OUR_CONFIG: &str = "\u{feff}# my hooks config\r\nmax_bytes = 4000\r\n\r\n[hosts.opencode]\r\nserver_url = \"http://127.0.0.1:1\" # mine\r\ncapture_prompts = true\r\nauthorization = \"Bearer my-own-token\"\r\n";

/// `path` becomes a link into a dotfiles folder holding `text`; returns the target.
fn link_dotfile(sb: &Sandbox, path: &Path, text: &str) -> PathBuf {
    let target = sb.root.path().join("dotfiles").join(path.file_name().unwrap());
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::write(&target, text).unwrap();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = fs::remove_file(path);
    std::os::unix::fs::symlink(&target, path).unwrap();
    target
}

#[track_caller]
fn assert_link(path: &Path, target: &Path) {
    let meta = fs::symlink_metadata(path).unwrap();
    assert!(
        meta.file_type().is_symlink(),
        "{} is no longer a link",
        path.display()
    );
    assert_eq!(fs::read_link(path).unwrap(), target);
}

fn setup_opencode(sb: &Sandbox) -> (i32, serde_json::Value) {
    let (code, out, err) = sb.cli_json(&[
        "setup",
        "opencode",
        "--server-url",
        "http://127.0.0.1:9",
        "--token-env",
        "PC_TEST_TOKEN",
        "--capture-prompts",
        "off",
    ]);
    assert!(code == 0 || code == 1, "{out}\n{err}");
    (code, out)
}

#[test]
fn opencode_linked_crlf_bom_configs_survive_rollback_setup_and_uninstall() {
    let mut sb = Sandbox::new();
    let oc_path = sb.opencode_config().join("opencode.jsonc");
    let oc_target = link_dotfile(&sb, &oc_path, OPENCODE_CONFIG);
    let our_target = link_dotfile(&sb, &sb.config(), OUR_CONFIG);

    // A failure after the MCP edit: both links and both targets' bytes come back.
    sb.env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), "mcp".into());
    let (code, out) = setup_opencode(&sb);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["result"], "rolled_back", "{out}");
    assert_link(&oc_path, &oc_target);
    assert_link(&sb.config(), &our_target);
    assert_eq!(fs::read_to_string(&oc_target).unwrap(), OPENCODE_CONFIG);
    assert_eq!(fs::read_to_string(&our_target).unwrap(), OUR_CONFIG);
    sb.env.remove("POWERCONTEXT_HOOKS_SETUP_FAULT");

    // Setup edits through the links and keeps each file's BOM and CRLF.
    let (code, out) = setup_opencode(&sb);
    assert_eq!(code, 0, "{out}");
    assert_link(&oc_path, &oc_target);
    assert_link(&sb.config(), &our_target);
    for target in [&oc_target, &our_target] {
        let text = fs::read_to_string(target).unwrap();
        assert!(text.starts_with('\u{feff}'), "{text:?}");
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "LF crept into {text:?}"
        );
    }
    let oc = fs::read_to_string(&oc_target).unwrap();
    assert!(oc.contains("\"powercontext\""), "{oc}");
    let ours = fs::read_to_string(&our_target).unwrap();
    assert!(ours.contains("server_url = \"http://127.0.0.1:9\""), "{ours}");
    assert!(ours.contains("capture_prompts = false"), "{ours}");
    assert!(!ours.contains("my-own-token"), "{ours}");
    // The user's own token waits in an owner-only file, never in the manifest.
    let installs = sb
        .home()
        .join(".local/state/powercontext-hooks/installs/opencode");
    let manifest = fs::read_to_string(installs.join("manifest.json")).unwrap();
    assert!(!manifest.contains("my-own-token"), "{manifest}");
    assert!(
        manifest.contains("127.0.0.1:1"),
        "prior server_url not recorded: {manifest}"
    );
    let prior = installs.join("prior-authorization.toml");
    assert_eq!(fs::metadata(&prior).unwrap().permissions().mode() & 0o777, 0o600);

    // Uninstall puts every byte back, including the settings the user had before.
    let (code, out, err) = sb.cli_json(&["uninstall", "opencode"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_link(&oc_path, &oc_target);
    assert_link(&sb.config(), &our_target);
    assert_eq!(fs::read_to_string(&oc_target).unwrap(), OPENCODE_CONFIG);
    assert_eq!(fs::read_to_string(&our_target).unwrap(), OUR_CONFIG);
    assert!(
        !sb.home()
            .join(".local/state/powercontext-hooks/installs/opencode")
            .exists()
    );
}

#[test]
fn claude_settings_link_is_kept_by_setup_and_restored_by_rollback() {
    let mut sb = Sandbox::new();
    let settings = sb.home().join(".claude/settings.json");
    let original = "{\r\n  \"model\": \"my-model\"\r\n}\r\n";
    let target = link_dotfile(&sb, &settings, original);

    sb.env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), "verify".into());
    let (code, out, _) = sb.cli_json(&["setup", "claude-code", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!(code, 1, "{out}");
    assert_link(&settings, &target);
    assert_eq!(fs::read_to_string(&target).unwrap(), original);
    sb.env.remove("POWERCONTEXT_HOOKS_SETUP_FAULT");

    let (code, out, err) = sb.cli_json(&["setup", "claude-code", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_link(&settings, &target);
    let now: serde_json::Value = serde_json::from_str(&fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(now["model"], "my-model");
    assert_eq!(now["enabledPlugins"]["powercontext@powercontext"], true, "{now}");
}

#[test]
fn claude_settings_keep_their_bom_crlf_and_order_and_uninstall_gives_back_the_same_bytes() {
    let sb = Sandbox::new();
    let settings = sb.home().join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // Claude's CLI rewrites this file with neither mark nor CRLF, its own key order, and leaves
    // empty plugin objects behind on uninstall.
    let original = "\u{feff}{\r\n  \"theme\": \"dark\",\r\n  \"model\": \"my-model\"\r\n}\r\n";
    fs::write(&settings, original).unwrap();
    let (code, out, err) = sb.cli_json(&["setup", "claude-code", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let installed = fs::read_to_string(&settings).unwrap();
    assert!(installed.starts_with('\u{feff}'), "{installed:?}");
    assert_eq!(
        installed.matches('\n').count(),
        installed.matches("\r\n").count(),
        "{installed:?}"
    );
    assert!(installed.contains("powercontext@powercontext"), "{installed:?}");
    let (code, out, err) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), original);
}

/// Our setup writes what the official CLI reads (its doctor then agrees), with the token only in
/// an owner-only credential file; uninstall takes all of it back.
#[test]
fn our_setup_writes_what_official_doctor_reads_and_uninstall_takes_it_back() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared_auth();
    let mut sb = Sandbox::new();
    sb.env
        .insert("PC_TEST_TOKEN".into(), RealServer::TEST_TOKEN.into());
    let before = sb.tree();
    let (code, out, err) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        &server.url(),
        "--token-env",
        "PC_TEST_TOKEN",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.to_string().contains(RealServer::TEST_TOKEN));

    let clients: serde_json::Value =
        serde_json::from_slice(&fs::read(sb.home().join(".config/powercontext/clients.json")).unwrap())
            .unwrap();
    assert_eq!(clients["hosts"]["claude-code"]["server_url"], server.url());
    let cred = sb.home().join(".claude/powercontext/credentials.json");
    assert_eq!(fs::metadata(&cred).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        fs::metadata(cred.parent().unwrap()).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let manifest = fs::read_to_string(
        sb.home()
            .join(".local/state/powercontext-hooks/installs/claude-code/manifest.json"),
    )
    .unwrap();
    assert!(!manifest.contains(RealServer::TEST_TOKEN), "{manifest}");

    // The official doctor finds the install and the Server it points at.
    let doctor = sb.official(&["doctor", "claude-code", "--json"]);
    assert!(
        doctor.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );

    let (code, out, err) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!cred.exists());
    assert!(!sb.home().join(".config/powercontext/clients.json").exists());
    let settings = fs::read_to_string(sb.home().join(".claude/settings.json")).unwrap_or_default();
    assert!(
        !settings.contains("pluginConfigs\": {\n    \"powercontext"),
        "{settings}"
    );
    // No file is left in the official CLI's places.
    let after = sb.tree();
    let added: Vec<&String> = after
        .keys()
        .filter(|k| !before.contains_key(*k) && !k.ends_with('/'))
        .filter(|k| k.starts_with(".config/powercontext/") || k.starts_with(".claude/powercontext/"))
        .collect();
    assert!(added.is_empty(), "{added:?}");
}

/// Takeover in both directions for Claude Code: our setup replaces an official install only with
/// `--take-over` (shown in the plan, rolled back on failure); the official installer takes ours
/// back after `powercontext-hooks uninstall`.
#[test]
fn claude_code_takeover_in_both_directions() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared();
    let mut sb = Sandbox::new();
    let tree = sb.package_tree();
    let official_setup = |sb: &Sandbox| sb.official_setup("claude-code", &tree, &server.url());
    let marketplace = |sb: &Sandbox| -> String {
        let v: serde_json::Value = serde_json::from_slice(
            &sb.host("claude", &["plugin", "marketplace", "list", "--json"])
                .stdout,
        )
        .unwrap();
        v.to_string()
    };
    let out = official_setup(&sb);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(marketplace(&sb).contains(tree.to_str().unwrap()));

    // Without --take-over: refused before any change, with the way out.
    let (code, out, _) = sb.cli_json(&["setup", "claude-code", "--server-url", &server.url()]);
    assert_eq!(code, 1, "{out}");
    assert!(out["error"].as_str().unwrap().contains("--take-over"), "{out}");

    // A failure mid-takeover restores the official install.
    sb.env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), "verify".into());
    let (code, out, _) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        &server.url(),
        "--take-over",
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["result"], "rolled_back", "{out}");
    assert!(
        marketplace(&sb).contains(tree.to_str().unwrap()),
        "{}",
        marketplace(&sb)
    );
    sb.env.remove("POWERCONTEXT_HOOKS_SETUP_FAULT");

    // With it: the plan says so, ours replaces theirs, and both doctors agree.
    let (code, out, err) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        &server.url(),
        "--take-over",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out["warnings"].to_string().contains("taking over"), "{out}");
    assert!(
        !marketplace(&sb).contains(tree.to_str().unwrap()),
        "{}",
        marketplace(&sb)
    );
    let (code, report, _) = sb.cli_json(&["doctor", "claude-code"]);
    assert_eq!(code, 0, "{report}");
    let doctor = sb.official(&["doctor", "claude-code"]);
    assert!(
        doctor.status.success(),
        "{}",
        String::from_utf8_lossy(&doctor.stdout)
    );

    // The other way: the official installer after our uninstall.
    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
    let out = official_setup(&sb);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(marketplace(&sb).contains(tree.to_str().unwrap()));
}

/// After our setup, the official doctor recognises the Pi package (it looks for the package name
/// `powercontext-pi` in `pi list`) and checks the Server saved in clients.json.
#[test]
fn official_doctor_recognises_our_pi_package() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared();
    let mut sb = Sandbox::new();
    crate::support::seed_foreign_packages(&mut sb, "pi");
    let (code, out, err) = sb.cli_json(&["setup", "pi", "--server-url", &server.url()]);
    assert_eq!(code, 0, "{out}\n{err}");
    let doctor = sb.official(&["doctor", "pi"]);
    assert!(
        doctor.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );
    let (code, out, _) = sb.cli_json(&["uninstall", "pi"]);
    assert_eq!(code, 0, "{out}");
}

/// OpenCode: our setup takes over the official installer's plugin file only with `--take-over`;
/// official doctor still finds an active, owned plugin afterwards.
#[test]
fn opencode_takeover_of_an_official_install() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared();
    let mut sb = Sandbox::new();
    crate::support::seed_foreign_packages(&mut sb, "opencode");
    let tree = sb.package_tree();
    let out = sb.official_setup("opencode", &tree, &server.url());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));

    let (code, out, _) = sb.cli_json(&["setup", "opencode", "--server-url", &server.url()]);
    assert_eq!(code, 1, "{out}");
    assert!(out["error"].as_str().unwrap().contains("does not own"), "{out}");
    let (code, out, err) = sb.cli_json(&["setup", "opencode", "--server-url", &server.url(), "--take-over"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out["warnings"].to_string().contains("taking over"), "{out}");
    let doctor = sb.official(&["doctor", "opencode"]);
    assert!(
        doctor.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );
}

/// The `powercontext-pi` packages `pi list` shows as installed (Pi loads each of them).
fn pi_powercontext_packages(sb: &Sandbox) -> Vec<PathBuf> {
    let out = sb.run(&crate::support::host_bin("pi").join("pi"), &["list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter(|l| l.starts_with("    "))
        .map(|l| PathBuf::from(l.trim()))
        .filter(|p| {
            fs::read(p.join("package.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["name"] == "powercontext-pi")
        })
        .collect()
}

/// Pi tells local packages apart by path, so ours and the official installer's copy (both named
/// `powercontext-pi`) would both load. Our setup refuses, `--take-over` removes theirs (exactly
/// one left); official setup after ours cannot remove ours, and our uninstall leaves theirs.
#[test]
fn pi_takeover_in_both_directions_leaves_one_package() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared();
    let mut sb = Sandbox::new();
    crate::support::seed_foreign_packages(&mut sb, "pi");
    let tree = sb.package_tree();
    let official_setup = || {
        let out = sb.official_setup("pi", &tree, &server.url());
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = official_setup();
    assert!(ok, "{text}");
    let theirs = pi_powercontext_packages(&sb);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    let settings = sb.home().join(".pi/agent/settings.json");
    let before = fs::read(&settings).unwrap();

    let (code, out, _) = sb.cli_json(&["setup", "pi", "--server-url", &server.url()]);
    assert_eq!(code, 1, "{out}");
    assert!(out["error"].as_str().unwrap().contains("--take-over"), "{out}");
    assert_eq!(fs::read(&settings).unwrap(), before, "a refused setup changed Pi");

    let (code, out, err) = sb.cli_json(&["setup", "pi", "--server-url", &server.url(), "--take-over"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out["warnings"].to_string().contains("taking over"), "{out}");
    assert_eq!(pi_powercontext_packages(&sb), [sb.plugin_dir("pi")]);
    let now: serde_json::Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert!(
        now["packages"].to_string().contains("npm:foreign-pi-package"),
        "{now}"
    );

    // The other way round the official installer adds its copy, then fails to remove ours: it
    // hands Pi the relative path `pi list` shows, which Pi resolves against the working
    // directory. Both would load until `powercontext-hooks uninstall pi` (README).
    let (ok, text) = official_setup();
    assert!(!ok && text.contains("No matching package found"), "{text}");
    assert_eq!(pi_powercontext_packages(&sb).len(), 2);
    let (code, out, _) = sb.cli_json(&["uninstall", "pi"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(pi_powercontext_packages(&sb), theirs);
    let (ok, text) = official_setup();
    assert!(ok, "{text}");
    assert_eq!(pi_powercontext_packages(&sb), theirs);
}

/// The DSH profile's `powercontext-dsh` dependency spec and how many `powercontext-dsh` rows the
/// composed profile has.
fn dsh_powercontext(sb: &Sandbox) -> (Option<String>, usize) {
    let pkg: serde_json::Value =
        serde_json::from_slice(&fs::read(sb.dsh_profile("web").join("package.json")).unwrap()).unwrap();
    let spec = pkg["dependencies"]["powercontext-dsh"]
        .as_str()
        .map(str::to_owned);
    let out = sb.run(
        &crate::support::host_bin("dsh").join("dsh"),
        &["--profile", "web", "--dump-config"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim().trim_start_matches("- ") == "id: powercontext-dsh")
        .count();
    (spec, rows)
}

/// DSH: one profile has one `powercontext-dsh` package. Our setup refuses the official
/// installer's, `--take-over` replaces it with ours, official setup after ours replaces ours, and
/// our uninstall then leaves theirs: exactly one row each time.
#[test]
fn dsh_takeover_in_both_directions_leaves_one_row() {
    use powercontext_hooks_test_support::real_server::RealServer;

    let server = RealServer::shared();
    let mut sb = Sandbox::new();
    crate::support::seed_foreign_packages(&mut sb, "dsh");
    let tree = sb.package_tree();
    let official_setup = || {
        let out = sb.official_setup("dsh", &tree, &server.url());
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    official_setup();
    let theirs = dsh_powercontext(&sb);
    assert_eq!(theirs.1, 1, "{theirs:?}");
    let package = sb.dsh_profile("web").join("package.json");
    let before = fs::read(&package).unwrap();

    let (code, out, _) = sb.cli_json(&["setup", "dsh", "--server-url", &server.url()]);
    assert_eq!(code, 1, "{out}");
    assert!(out["error"].as_str().unwrap().contains("--take-over"), "{out}");
    assert_eq!(
        fs::read(&package).unwrap(),
        before,
        "a refused setup changed the profile"
    );

    let (code, out, err) = sb.cli_json(&["setup", "dsh", "--server-url", &server.url(), "--take-over"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out["warnings"].to_string().contains("taking over"), "{out}");
    let ours = format!("link:{}", sb.plugin_dir("dsh").display());
    assert_eq!(dsh_powercontext(&sb), (Some(ours), 1));
    let pkg: serde_json::Value = serde_json::from_slice(&fs::read(&package).unwrap()).unwrap();
    assert!(pkg["dependencies"]["mine-dsh-plugin"].is_string(), "{pkg}");

    official_setup();
    assert_eq!(dsh_powercontext(&sb), theirs);
    let (code, out, _) = sb.cli_json(&["uninstall", "dsh"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(dsh_powercontext(&sb), theirs);
}

/// Every file under `dir`, depth first.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A state directory left loose, with `installs` planted as a link to someone else's folder:
/// setup refuses (naming the link and the fix) and writes nothing there, neither the plugin nor
/// the manifest nor the user's earlier token; once the link is gone, setup tightens the state
/// directory and installs into real folders of its own.
#[test]
fn setup_never_writes_through_a_linked_installs_folder() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let state = home.join(".local/state/powercontext-hooks");
    fs::create_dir_all(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o777)).unwrap();
    let elsewhere = root.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join("installs")).unwrap();
    // The user's earlier token, which setup keeps aside for uninstall.
    let creds = home.join(".pi/agent/powercontext");
    fs::create_dir_all(&creds).unwrap();
    fs::set_permissions(&creds, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(
        creds.join("credentials.json"),
        r#"{"version":1,"server_url":"http://127.0.0.1:9","token_type":"Bearer","access_token":"OLD-TOKEN-KEPT"}"#,
    )
    .unwrap();
    fs::set_permissions(creds.join("credentials.json"), fs::Permissions::from_mode(0o600)).unwrap();
    // A stand-in `pi` that lists our plugin as installed.
    let plugin = state.join("installs/pi/plugin");
    let pi = root.path().join("pi");
    fs::write(
        &pi,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo 0.73.1;; list) echo 'User packages:'; echo '  {}';; esac\nexit 0\n",
            plugin.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&pi, fs::Permissions::from_mode(0o755)).unwrap();
    let setup = || {
        std::process::Command::new(crate::support::CLI)
            .args([
                "setup",
                "pi",
                "--server-url",
                "http://127.0.0.1:9",
                "--token-env",
                "PC_TOKEN",
                "--host-cli",
            ])
            .arg(&pi)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &home)
            .env("PC_TOKEN", "new-token-kept")
            .output()
            .unwrap()
    };

    let out = setup();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let written = files_under(&elsewhere);
    assert!(
        written.is_empty(),
        "setup wrote through the planted link (exit {:?}): {written:#?}",
        out.status
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&state.join("installs").display().to_string())
            && stderr.contains("symlink")
            && stderr.contains("remove"),
        "the error names neither the link nor the fix: {stderr}"
    );

    fs::remove_file(state.join("installs")).unwrap();
    let out = setup();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for dir in [state.clone(), state.join("installs"), state.join("installs/pi")] {
        let meta = fs::symlink_metadata(&dir).unwrap();
        assert!(meta.is_dir(), "{}", dir.display());
        assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{}", dir.display());
    }
    assert!(state.join("installs/pi/manifest.json").is_file());
    assert!(files_under(&elsewhere).is_empty());
}

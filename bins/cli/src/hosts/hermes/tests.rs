//! Unit tests of the Hermes installer: the `hooks:` block added, extended and removed byte for byte
//! around the user's own lines, and the consent allowlist; files only in temporary directories.

use super::*;

const CMD: &str = "/s/installs/hermes/bin/powercontext-hook-hermes";

fn ours(at: usize, timeout: u32) -> String {
    format!(
        "{:at$}- command: \"{CMD}\"  {MARK}\n{:w$}timeout: {timeout}  {MARK}\n",
        "",
        "",
        w = at + 2
    )
}

#[test]
fn a_file_without_hooks_gets_a_marked_block_at_its_end_and_loses_it_again() {
    let user = "# my Hermes\nmodel:\n  provider: custom   # keep\n  default: 'x'\n\n\n";
    let added = add_hooks(Some(user), CMD).unwrap();
    let want = format!(
        "# my Hermes\nmodel:\n  provider: custom   # keep\n  default: 'x'\n\n\nhooks:  {MARK}\n  pre_llm_call:  {MARK}\n{}  \
         on_session_end:  {MARK}\n{}  on_session_finalize:  {MARK}\n{}",
        ours(4, 10),
        ours(4, 5),
        ours(4, 5)
    );
    assert_eq!(added, want);
    // Idempotent, and uninstall gives back the user's bytes.
    assert_eq!(add_hooks(Some(&added), CMD).unwrap(), added);
    assert!(has_hooks(&added, CMD));
    assert_eq!(remove_hooks(&added), user);
    assert_eq!(
        add_hooks(None, CMD).unwrap().lines().next(),
        Some(&*format!("hooks:  {MARK}"))
    );
    assert_eq!(remove_hooks(&add_hooks(None, CMD).unwrap()), "");
}

#[test]
fn an_existing_hooks_block_is_extended_in_place_and_the_users_entries_stay_byte_for_byte() {
    let user = "hooks:\n    # the user's own\n    pre_llm_call:\n    - command: ~/mine.sh   # theirs\n      timeout: 3\n    \
                pre_tool_call:\n      - command: /x\nhooks_auto_accept: false\nother: 1\n";
    let added = add_hooks(Some(user), CMD).unwrap();
    let want = format!(
        "hooks:\n    # the user's own\n    pre_llm_call:\n    - command: ~/mine.sh   # theirs\n      timeout: 3\n{}    \
         pre_tool_call:\n      - command: /x\n    on_session_end:  {MARK}\n{}    on_session_finalize:  {MARK}\n{}\
         hooks_auto_accept: false\nother: 1\n",
        ours(4, 10),
        ours(6, 5),
        ours(6, 5)
    );
    assert_eq!(added, want);
    assert!(!added.contains("hooks_auto_accept: true"));
    assert_eq!(remove_hooks(&added), user);
    // CRLF files keep their line ends.
    let crlf = user.replace('\n', "\r\n");
    let added = add_hooks(Some(&crlf), CMD).unwrap();
    assert!(!added.replace("\r\n", "").contains('\n'), "{added:?}");
    assert_eq!(remove_hooks(&added), crlf);
}

#[test]
fn a_marked_key_the_user_added_entries_under_keeps_them() {
    let added = add_hooks(Some("a: 1\n"), CMD).unwrap();
    let with_theirs = added.replace(
        &format!("  on_session_end:  {MARK}\n"),
        &format!("  on_session_end:  {MARK}\n    - command: /theirs\n"),
    );
    let back = remove_hooks(&with_theirs);
    assert_eq!(back, "a: 1\nhooks:\n  on_session_end:\n    - command: /theirs\n");
}

#[test]
fn our_hook_in_unmarked_lines_is_refused_not_added_twice() {
    // What Hermes' own save (PyYAML, no comments) makes of our block.
    let rewritten =
        format!("model:\n  provider: custom\nhooks:\n  pre_llm_call:\n  - command: {CMD}\n    timeout: 10\n");
    let e = add_hooks(Some(&rewritten), CMD).unwrap_err().to_string();
    assert!(
        e.contains("without the") && e.contains("remove those entries"),
        "{e}"
    );
    assert_eq!(remove_hooks(&rewritten), rewritten);
}

#[test]
fn flow_style_hooks_are_refused_with_the_fix() {
    for text in ["hooks: {}\n", "hooks: []\n", "hooks:\n  pre_llm_call: []\n"] {
        let e = add_hooks(Some(text), CMD).unwrap_err().to_string();
        assert!(e.contains("block"), "{text}: {e}");
    }
    // `hooks_auto_accept` or `hooksfoo` is not `hooks`.
    assert!(
        add_hooks(Some("hooks_auto_accept: false\nhooksx: 1\n"), CMD)
            .unwrap()
            .contains("\nhooks:  ")
    );
}

#[test]
fn times_are_written_as_python_writes_them() {
    assert_eq!(iso_utc(0, 0), "1970-01-01T00:00:00Z");
    assert_eq!(iso_utc(1_796_526_483, 617_577), "2026-12-06T03:08:03.617577Z");
    assert_eq!(iso_utc(951_782_400, 5), "2000-02-29T00:00:00.000005Z");
    // 1796526481.583769 s (Python: datetime.fromtimestamp(...) -> .583769).
    let t = UNIX_EPOCH + Duration::new(1_796_526_481, 583_769_400);
    assert_eq!(python_time(t), "2026-12-06T03:08:01.583769Z");
    let t = UNIX_EPOCH + Duration::new(1_796_526_481, 999_999_900);
    assert_eq!(python_time(t), "2026-12-06T03:08:02Z");
}

#[test]
fn consent_is_recorded_as_hermes_records_it_and_revoked_alone() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let exe = home.join("hook");
    std::fs::write(&exe, "x").unwrap();
    let theirs =
        r#"{"approvals": [{"event": "pre_llm_call", "command": "/theirs", "approved_at": "é"}], "x": 1}"#;
    std::fs::write(home.join(ALLOWLIST), theirs).unwrap();
    assert!(!consented(home, CMD).unwrap());
    record_consent(home, CMD, &exe).unwrap();
    assert!(consented(home, CMD).unwrap());
    let text = std::fs::read_to_string(home.join(ALLOWLIST)).unwrap();
    // json.dumps(indent=2, sort_keys=True): sorted keys, ASCII escapes, no final newline.
    assert!(text.starts_with("{\n  \"approvals\": [\n    {\n      \"approved_at\": \"\\u00e9\",\n      \"command\": \"/theirs\","), "{text}");
    assert!(text.ends_with("\n  ],\n  \"x\": 1\n}"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let approvals = v["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 4);
    for (e, (event, _)) in approvals[1..].iter().zip(events()) {
        assert_eq!(e["event"], event);
        assert_eq!(e["command"], CMD);
        assert!(e["approved_at"].as_str().unwrap().ends_with('Z'));
        let mtime = python_time(std::fs::metadata(&exe).unwrap().modified().unwrap());
        assert_eq!(e["script_mtime_at_approval"], mtime.as_str());
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.join(ALLOWLIST))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Again: replaced, not repeated.
    record_consent(home, CMD, &exe).unwrap();
    assert_eq!(read_approvals(&home.join(ALLOWLIST)).unwrap().unwrap().1.len(), 4);
    assert_eq!(revoke_consent(home, CMD).unwrap(), 3);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(home.join(ALLOWLIST)).unwrap()).unwrap();
    assert_eq!(v, serde_json::from_str::<Value>(theirs).unwrap());
    // A file that held only ours goes with them, and so does the lock file.
    std::fs::remove_file(home.join(ALLOWLIST)).unwrap();
    record_consent(home, CMD, &exe).unwrap();
    assert!(home.join(format!("{ALLOWLIST}.lock")).exists());
    assert_eq!(revoke_consent(home, CMD).unwrap(), 3);
    assert!(!home.join(ALLOWLIST).exists());
    assert!(!home.join(format!("{ALLOWLIST}.lock")).exists());
}

#[test]
fn a_damaged_or_linked_allowlist_is_refused_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::write(home.join(ALLOWLIST), "{not json").unwrap();
    let e = record_consent(home, CMD, Path::new("/nonexistent")).unwrap_err();
    assert!(format!("{e:#}").contains("fix or remove it"), "{e:#}");
    assert_eq!(
        std::fs::read_to_string(home.join(ALLOWLIST)).unwrap(),
        "{not json"
    );
    std::fs::remove_file(home.join(ALLOWLIST)).unwrap();
    std::fs::write(home.join("elsewhere.json"), "{}").unwrap();
    std::os::unix::fs::symlink(home.join("elsewhere.json"), home.join(ALLOWLIST)).unwrap();
    let e = record_consent(home, CMD, Path::new("/nonexistent")).unwrap_err();
    assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
    assert_eq!(
        std::fs::read_to_string(home.join("elsewhere.json")).unwrap(),
        "{}"
    );
}

#[test]
fn hooks_list_is_read_per_event() {
    let out = format!(
        "Configured shell hooks (3 total):\n\n  [on_session_end]\n    - {CMD} (timeout=5s, ✓ allowed)\n      approved_at: x\n\n  \
         [pre_llm_call]\n    - /other (timeout=5s, ✓ allowed)\n    - {CMD} (timeout=10s, ✗ not allowlisted)\n\n"
    );
    assert_eq!(
        parse_listing(&out, CMD),
        vec![
            ("on_session_end".to_owned(), true),
            ("pre_llm_call".to_owned(), false)
        ]
    );
}

#[test]
fn a_quoted_or_spaced_hooks_key_is_extended_not_shadowed_by_a_second_block() {
    for key in ["\"hooks\":", "'hooks':", "hooks :", "\"hooks\" :"] {
        let user = format!("model: x\n{key}\n  pre_llm_call:\n    - command: \"/usr/bin/true\"\n");
        let added = add_hooks(Some(&user), CMD).unwrap();
        let top: Vec<&str> = added
            .lines()
            .filter(|l| key_line(l, 0, "hooks").is_some())
            .collect();
        assert_eq!(top, [key], "{added}");
        assert!(added.starts_with(&format!(
            "model: x\n{key}\n  pre_llm_call:\n    - command: \"/usr/bin/true\"\n{}",
            ours(4, 10)
        )));
        assert_eq!(remove_hooks(&added), user);
    }
    // A quoted event key is the event, not a second one.
    let user = "hooks:\n  'pre_llm_call':\n    - command: /x\n";
    let added = add_hooks(Some(user), CMD).unwrap();
    assert_eq!(added.matches("pre_llm_call").count(), 1, "{added}");
}

#[test]
fn hooks_in_a_form_the_edit_cannot_extend_are_refused_with_the_fix() {
    for (text, says) in [
        ("hooks: &h\n  pre_llm_call:\n    - command: /x\n", "anchor"),
        ("a: &h\n  x: 1\nhooks: *h\n", "anchor"),
        ("\"hooks\": {}\n", "block"),
        ("hooks: !!map\n  x: 1\n", "anchor"),
        ("{model: x, hooks: {}}\n", "flow style"),
        ("? hooks\n: {}\n", "explicit"),
        ("base: &b\n  hooks: {}\n<<: *b\n", "merge key"),
        ("hooks:\n  pre_llm_call: []\n'hooks':\n  x: 1\n", "more than one"),
        ("hooks:\n- command: /x\n", "list"),
    ] {
        let e = add_hooks(Some(text), CMD).unwrap_err().to_string();
        assert!(
            e.contains(says) && e.contains("then run setup again"),
            "{text}: {e}"
        );
    }
}

#[test]
fn uninstall_removes_only_our_lines_inside_the_top_level_hooks_block() {
    let mark = format!("# {}", &MARK[2..]);
    let user = format!(
        "mcp:\n  srv:\n    url: http://127.0.0.1:8000/mcp  {mark}\n    - command: \"/a\"  {mark}\n      timeout: 5  \
         {mark}\n  pre_llm_call:  {mark}\nhooks:\n  pre_llm_call:\n    - command: /theirs  {mark}\n      \
         timeout: 5\n    - command: \"/b\"  {mark}\n      timeout: 5 {mark}\n"
    );
    let added = add_hooks(Some(&user), CMD).unwrap();
    assert!(added.len() > user.len());
    assert_eq!(remove_hooks(&added), user);
    assert_eq!(remove_hooks(&user), user);
}

#[test]
fn setup_then_uninstall_gives_back_the_exact_bytes() {
    for user in [
        "model: x",
        "model: x\r\nother: 1",
        "model: x\nb: 2\r\nc: 3\n",
        "a: 1\r\nhooks:\n  pre_llm_call:\r\n    - command: /x\n",
        "hooks:\r\n  pre_llm_call:\r\n    - command: /x",
        "a: 1\n\n# tail",
        "",
    ] {
        let added = add_hooks(Some(user), CMD).unwrap();
        assert!(added.contains(CMD), "{user:?}");
        assert_eq!(remove_hooks(&added), user, "{user:?} -> {added:?}");
        assert_eq!(add_hooks(Some(&added), CMD).unwrap(), added, "{user:?}");
        assert!(has_hooks(&added, CMD));
    }
    // Our lines take their neighbours' line ends: an LF file's untouched lines stay LF.
    let added = add_hooks(Some("a: 1\nb: 2\r\n"), CMD).unwrap();
    assert!(added.starts_with("a: 1\nb: 2\r\nhooks:  "), "{added:?}");
    assert!(
        !added["a: 1\n".len()..].replace("\r\n", "").contains('\n'),
        "{added:?}"
    );
}

# Shared by scripts/ensure-*: a throwaway HOME for every host CLI and package manager call, and a
# version check that says what it saw against what it wanted. Sourced, never run.
#
# The real HOME is never touched: host CLIs create folders there just to print a version
# (~/.codex/tmp, ~/.config/opencode, ~/.local/share/pnpm) and warn on stderr about where HOME is.

# deps_isolate_home: points HOME, the XDG folders and the npm cache at a temporary folder removed
# on exit (npm's cache under target/, so a second install is fast and `cargo clean` drops it).
# Idempotent within one process tree: a caller's isolated HOME is kept.
deps_isolate_home() {
  local repo="$1"
  if [[ -n "${POWERCONTEXT_DEPS_HOME:-}" && "${HOME:-}" == "$POWERCONTEXT_DEPS_HOME" ]]; then
    return 0
  fi
  POWERCONTEXT_DEPS_HOME="$(mktemp -d "${TMPDIR:-/tmp}/powercontext-deps-home.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: the path is fixed for this process
  trap "rm -rf '$POWERCONTEXT_DEPS_HOME'" EXIT
  export POWERCONTEXT_DEPS_HOME HOME="$POWERCONTEXT_DEPS_HOME"
  export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" \
    XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
  export npm_config_cache="${npm_config_cache:-$repo/target/deps-cache/npm}"
  export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$repo/target/deps-cache/pip}"
  # Known, harmless npm noise on a first install: engine notes of transitive packages and the
  # notice about packages whose install scripts are not run. Real errors still print.
  export npm_config_loglevel="${npm_config_loglevel:-error}" npm_config_update_notifier=false
  unset CLAUDE_CONFIG_DIR CODEX_HOME OPENCODE_CONFIG_DIR PI_CODING_AGENT_DIR DSH_HOME PNPM_HOME GEMINI_CLI_HOME \
    OPENCLAW_STATE_DIR OPENCLAW_CONFIG_PATH
}

# deps_version NAME WANTED COMMAND...: runs COMMAND, takes the version from its stdout (the first
# non-empty line; a CLI that prints its version only on stderr, as Pi does, is read there, line by
# line, for the wanted string), and succeeds when it equals WANTED. Prints what it saw either way:
# the reason a pinned install "does not run" is then on screen, not guessed.
deps_version() {
  local name="$1" wanted="$2" out err saw rc=0
  shift 2
  # Not installed yet is the usual first run, not a mismatch worth a message.
  [[ "$1" != */* || -x "$1" ]] || return 1
  err="$(mktemp "${TMPDIR:-/tmp}/deps-version.XXXXXX")"
  out="$("$@" 2>"$err")" || rc=$?
  saw="$(printf '%s\n' "$out" | sed -n '/[^[:space:]]/{p;q}')"
  if [[ -z "$saw" ]] && grep -qxF -- "$wanted" "$err"; then
    saw="$wanted"
  fi
  if [[ $rc -ne 0 || "$saw" != "$wanted" ]]; then
    echo "$name: ${*: -2:1} --version printed '${saw:-nothing on stdout}' (exit $rc), wanted '$wanted'" >&2
    if [[ -s "$err" ]]; then
      echo "$name: its stderr: $(head -c 400 "$err" | tr '\n' ' ')" >&2
    fi
    rm -f "$err"
    return 1
  fi
  rm -f "$err"
  DEPS_SAW="$saw"
}

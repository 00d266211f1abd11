# One entry point for building, testing and demonstrating powercontext-hooks.
# `make demo` and `make test` are the two commands the README opens with.
SHELL := /bin/bash
CARGO ?= cargo
TEST_ARGS ?=

.PHONY: all build release install dist deps demo test unit e2e bench lint fmt clippy clean-state

all: build

build:
	$(CARGO) build --locked

release:
	@echo "==> building the release executables (target/release; the first build takes a few minutes)"
	$(CARGO) build --release --locked

# Installs the CLI and the hook executables into $(PREFIX)/bin (default ~/.local/bin), the same
# set `cargo install --locked --path .` installs. `powercontext-hooks setup` then copies the hook
# executable it wires into its own folder (<state>/installs/<host>/bin), so a later `cargo clean`
# breaks nothing; the MCP token helper it writes names this installed CLI.
PREFIX ?= $(HOME)/.local
install: release
	@mkdir -p "$(PREFIX)/bin"
	@for b in $$(sed -n '/^\[\[bin\]\]/{n;s/^name = "\(.*\)"/\1/p}' Cargo.toml); do \
	  install -m 0755 "target/release/$$b" "$(PREFIX)/bin/.$$b.new" && mv -f "$(PREFIX)/bin/.$$b.new" "$(PREFIX)/bin/$$b" || exit 1; \
	done
	@echo "installed into $(PREFIX)/bin; make sure it is on your PATH (powercontext-hooks version)"

# The plugin source tree for the official installer: `powercontext setup <host> --source dist/plugins`.
# It references the release executables in target/release by absolute path: keep both in place.
DIST ?= dist/plugins
dist: release
	target/release/powercontext-hooks package --out $(DIST)

# Everything the tests need that does not come from cargo: the pinned Server and the host CLIs.
# Both run their tools with a throwaway HOME (scripts/lib/deps.sh): the real one is never touched.
deps:
	@echo "==> installing the pinned PowerContext Server (.venv-server) and host CLIs (tests/e2e/*/node_modules)"
	scripts/ensure-server-venv
	scripts/ensure-hosts

demo:
	scripts/demo

# The whole suite: unit tests, fault injection, the real Server, the real host CLIs, and the
# release-binary panic test. Tests run inside a loopback-only network namespace. Every test
# binary runs even when one fails (--no-fail-fast), and a summary of each closes the output.
test: deps release
	$(CARGO) test --locked --workspace --no-run
	scripts/in-netns scripts/test-summary $(CARGO) test --offline --locked --workspace --no-fail-fast -- $(TEST_ARGS)

# Only the real-host end-to-end tests.
e2e: deps release
	$(CARGO) test --locked --test integration --no-run
	scripts/in-netns scripts/test-summary $(CARGO) test --offline --locked --test integration -- e2e_ $(TEST_ARGS)

# Hook cost, deadline adherence and scaling against the interpreter floor: one run
# writes docs/benchmarks.md and docs/benchmarks.json. Loopback-only network namespace, as the tests.
# POWERCONTEXT_OFFICIAL_HOOKS=<upstream integrations/claude-code/plugins/powercontext directory> adds the
# official Python Claude Code hook to the real-Server prompt-path table (skipped, with a message, when unset);
# POWERCONTEXT_BENCH_ONLY=prompt-path runs that table and the real-Server burst alone (report under target/);
# POWERCONTEXT_BENCH_ONLY=floor runs the hooks against the floor client, the first prompt of a session,
# Server down/hanging and prompt size (report under target/bench-floor); =prompt-size the prompt-size rows
# alone (report under target/bench-prompt-size).
bench:
	@for t in python3 node git /usr/bin/time; do command -v $$t >/dev/null || { \
	  echo "make bench: $$t is missing; run: apt-get install -y python3 nodejs git time" >&2; exit 1; }; done
	scripts/ensure-server-venv
	$(CARGO) bench --locked --bench hook_bench --no-run
	scripts/in-netns $(CARGO) bench --offline --locked --bench hook_bench

unit:
	$(CARGO) test --locked --workspace --lib

lint: fmt clippy

fmt:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

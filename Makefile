# One entry point for building, testing and demonstrating powercontext-hooks.
# `make demo` and `make test` are the two commands the README opens with.
SHELL := /bin/bash
CARGO ?= cargo
TEST_ARGS ?=

.PHONY: all build release dist deps demo test unit e2e bench lint fmt clippy clean-state

all: build

build:
	$(CARGO) build --locked

release:
	$(CARGO) build --release --locked

# The plugin source tree for the official installer: `powercontext setup <host> --source dist/plugins`.
# It references the release executables in target/release by absolute path: keep both in place.
DIST ?= dist/plugins
dist: release
	target/release/powercontext-hooks package --out $(DIST)

# Everything the tests need that does not come from cargo: the pinned Server and the host CLIs.
deps:
	scripts/ensure-server-venv
	scripts/ensure-hosts

demo:
	scripts/demo

# The whole suite: unit tests, fault injection, the real Server, the real host CLIs, and the
# release-binary panic test. Tests run inside a loopback-only network namespace.
test: deps release
	$(CARGO) test --locked --workspace --no-run
	scripts/in-netns $(CARGO) test --offline --locked --workspace -- $(TEST_ARGS)

# Only the real-host end-to-end tests.
e2e: deps release
	$(CARGO) test --locked --test integration --no-run
	scripts/in-netns $(CARGO) test --offline --locked --test integration -- e2e_ $(TEST_ARGS)

# Hook cost, deadline adherence and scaling against the interpreter floor: one run
# writes docs/benchmarks.md and docs/benchmarks.json. Loopback-only network namespace, as the tests.
# POWERCONTEXT_OFFICIAL_HOOKS=<upstream integrations/claude-code/plugins/powercontext directory> adds the
# official Python Claude Code hook to the real-Server prompt-path table (skipped, with a message, when unset);
# POWERCONTEXT_BENCH_ONLY=prompt-path runs that table and the real-Server burst alone (report under target/).
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

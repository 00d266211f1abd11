# One entry point for building, testing and demonstrating powercontext-hooks.
# `make demo` and `make test` are the two commands the README opens with.
SHELL := /bin/bash
CARGO ?= cargo
TEST_ARGS ?=

.PHONY: all build release deps demo test unit e2e lint fmt clippy clean-state

all: build

build:
	$(CARGO) build --locked

release:
	$(CARGO) build --release --locked

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

unit:
	$(CARGO) test --locked --workspace --lib

lint: fmt clippy

fmt:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

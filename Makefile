# framewire — the two commands: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
BIN := target/release/framewire

.PHONY: all setup web build demo test test-rust test-python test-web lint bench corpus vectors clean

all: build

setup:
	@scripts/setup.sh

# The browser pages: type-checked (strict) and bundled into web/dist, which the server crate
# embeds at build time.
web: setup
	cd web && npx tsc --noEmit -p . && node build.mjs

build: setup web
	$(CARGO) build --release --locked

demo: build
	$(BIN) demo

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings

test-rust: setup web
	$(CARGO) test --release --locked --workspace

test-python: build
	cd clients/python-daylight && FRAMEWIRE_BIN=$(CURDIR)/$(BIN) ../../.venv/bin/python -m pytest -q

# Node unit tests (codecs against spec/vectors, Python's lz4 and xxhash), then the pages in
# headless Chromium against the real server, one at a time.
test-web: build
	cd web && node --test tests/unit/ && FRAMEWIRE_BIN=$(CURDIR)/$(BIN) node --test --test-concurrency=1 tests/browser/

test: lint test-rust test-python test-web
	@echo "make test: all checks passed"

bench: build
	$(BIN) bench codec
	$(BIN) bench e2e --viewers 4 --seconds 10
	$(BIN) bench ipc

# Real programs under Xvfb (Chromium, a terminal, vim, a dragged window, ffplay, glxgears), each recorded
# with fixed actions and timing to corpus/*.fwrec while x11vnc serves the same screen to a
# metering viewer; then both side by side (corpus/RESULTS.md). About two minutes.
corpus: build
	python3 scripts/corpus.py

vectors:
	python3 spec/vectors/make_vectors.py

clean:
	$(CARGO) clean
	rm -rf .venv

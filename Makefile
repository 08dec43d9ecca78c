# framewire — the two commands: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
BIN := target/release/framewire

.PHONY: all setup build demo test test-rust test-python lint bench vectors clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --locked

demo: build
	$(BIN) demo

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings

test-rust: setup
	$(CARGO) test --release --locked --workspace

test-python: build
	cd clients/python-daylight && FRAMEWIRE_BIN=$(CURDIR)/$(BIN) ../../.venv/bin/python -m pytest -q

test: lint test-rust test-python
	@echo "make test: all checks passed"

bench: build
	$(BIN) bench codec
	$(BIN) bench e2e --viewers 4 --seconds 10
	$(BIN) bench ipc

vectors:
	python3 spec/vectors/make_vectors.py

clean:
	$(CARGO) clean
	rm -rf .venv

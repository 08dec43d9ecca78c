#!/usr/bin/env bash
# Installs what building and testing framewire needs, idempotently, on a fresh Debian machine:
# a C compiler (liblz4 and zstd are built from their crates' bundled sources), a Rust toolchain
# with rustfmt and clippy, promtool (Prometheus' checker, for the /metrics test), Node with the
# web pages' npm packages, Chromium and Xvfb (browser and X11 tests), xterm, xdotool and
# x11vnc (a real application in colour; the VNC peer), and a Python virtualenv
# with pytest, lz4, xxhash and zstandard for the independent clients and the codec tests. Anything already present is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ] || need_apt+=(cargo rustc)
# promtool validates the /metrics exposition in the tests (Debian's prometheus package).
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
# The browser pages are TypeScript bundled with esbuild (Node at build time only), tested in
# Debian's headless Chromium; X11 capture and input are tested on an Xvfb screen.
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v Xvfb >/dev/null 2>&1 || need_apt+=(xvfb)
# A real application for the colour test (xterm, moved and scrolled with xdotool), and the VNC
# server framewire is measured against on the same screen (scripts/corpus.py).
command -v xterm >/dev/null 2>&1 || need_apt+=(xterm)
command -v xdotool >/dev/null 2>&1 || need_apt+=(xdotool)
command -v x11vnc >/dev/null 2>&1 || need_apt+=(x11vnc)
# Emulated networks (crates/netem): namespaces with `ip netns`, rate limits with `tc` tbf.
{ command -v ip && command -v tc; } >/dev/null 2>&1 || need_apt+=(iproute2)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
export PATH="$HOME/.cargo/bin:$PATH"
if command -v rustup >/dev/null 2>&1; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c" >/dev/null 2>&1 || true
  done
fi

# The pages' build and test packages, exactly as package-lock.json pins them.
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "setup: installing the web pages' npm packages"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
# python-xlib: the browser input test's independent X client (web/tests/browser/xprobe.py);
# zstandard: the C libzstd, which makes the frames the page's zstd decoder is tested on.
if ! .venv/bin/python -c 'import pytest, lz4.block, xxhash, Xlib, zstandard' >/dev/null 2>&1; then
  echo "setup: installing pytest, lz4, xxhash, python-xlib, zstandard into .venv"
  .venv/bin/pip install -q --disable-pip-version-check pytest lz4 xxhash python-xlib zstandard
fi

#!/usr/bin/env bash
# framewire-netem: checks that emulated links work on this machine and prints what the tests
# measured, after deleting namespaces left behind by killed runs (`fw-...-<pid>-<n>` whose pid
# is gone). Needs root. The tests print `SKIPPED: <reason>` where links cannot be built.
#
#     scripts/netem-check.sh            # clean stale namespaces, then run the crate's tests
#     scripts/netem-check.sh --clean    # only clean stale namespaces
set -euo pipefail
cd "$(dirname "$0")/.."

for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    if [[ $ns =~ ^fw-.*-([0-9]+)-[0-9]+$ ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
        echo "deleting stale namespace $ns (pid ${BASH_REMATCH[1]} is gone)"
        ip netns del "$ns"
    fi
done
[[ ${1:-} == --clean ]] && exit 0

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/netem-target}
cargo test --release -p framewire-netem -- --nocapture 2>&1 |
    grep -E '^(SKIPPED|udp echo|loss|jitter|tcp|test result|drop took)|FAILED|panicked'

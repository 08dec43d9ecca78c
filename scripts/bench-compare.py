#!/usr/bin/env python3
"""Side-by-side benchmark of two framewire binaries on this machine, runs interleaved
(A, B, A, B, ...) so drift on a shared host hits both alike. Medians over the runs, and the
ratio B / A.

    scripts/bench-compare.py OLD_BINARY NEW_BINARY [--runs 3] [--only e2e|codec|loadgen]

Measures `bench e2e` (scroll and typing, 4 viewers, 1600x1200), `bench codec` (sharp; scroll,
typing, mixed) and `loadgen` (1000 sensor connections at 220 lines/s each, 4-5 lines per write)
against a `serve` of each binary. Prints a Markdown table for BENCHMARKS.md.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    return json.loads(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def e2e(binary, scene):
    r = run_json([binary, "bench", "e2e", "--scene", scene, "--viewers", "4", "--seconds", "10", "--json"])
    assert r["checksum_failures"] == 0
    return {f"e2e {scene} p50 ms": r["e2e_ms_p50"], f"e2e {scene} p99 ms": r["e2e_ms_p99"]}


def codec(binary):
    rows = run_json([binary, "bench", "codec", "--resolutions", "sharp", "--scenes",
                     "scroll,typing,mixed", "--frames", "120", "--json"])
    out = {}
    for r in rows:
        s = r["scene"]
        out[f"codec {s} grey+hash ms"] = r["grey_hash_ms_p50"]
        out[f"codec {s} row delta ms"] = r["rows"]["delta_compress_ms_p50"]
        out[f"codec {s} row bytes/frame"] = r["rows"]["bytes_per_frame_mean"]
    return out


def loadgen(binary):
    v1, sensors = free_port(), free_port()
    tmp = tempfile.mkdtemp(prefix="fw-bench-")
    server = subprocess.Popen(
        [binary, "serve", "--scene", "idle", "--resolution", "cozy", "--no-daylight", "--no-http",
         "--no-touch", "--port", str(v1), "--sensor-port", str(sensors),
         "--control-socket", os.path.join(tmp, "ctl"), "--status-file", os.path.join(tmp, "st")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", sensors), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "server did not start"
                time.sleep(0.05)
        stats = os.path.join(tmp, "loadgen.json")
        subprocess.run([binary, "loadgen", "--clients", "1000", "--duration", "10", "--rate", "220",
                        "--write-every-ms", "20", "--port", str(sensors), "--subscribe-port", str(v1),
                        "--report-interval", "100", "--stats-file", stats],
                       capture_output=True, check=True, timeout=300)
        r = json.load(open(stats))
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    e = r["end_to_end"]
    return {"loadgen lines/s": r["aggregate"]["aggregate_pps"], "loadgen e2e p99 ms": e["p99_ms"],
            "loadgen server CPU %": r["server_process"]["cpu_percent"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["e2e", "codec", "loadgen"],
                    help="run one benchmark only (more runs of a noisy figure)")
    args = ap.parse_args()
    parts = {
        "e2e": [lambda b: e2e(b, "scroll"), lambda b: e2e(b, "typing")],
        "codec": [codec],
        "loadgen": [loadgen],
    }
    chosen = parts[args.only] if args.only else [p for ps in parts.values() for p in ps]
    results = {args.a: {}, args.b: {}}
    for i in range(args.runs):
        for binary in (args.a, args.b):
            for part in chosen:
                for k, v in part(binary).items():
                    results[binary].setdefault(k, []).append(v)
            print(f"run {i + 1}/{args.runs} of {binary} done", flush=True)
    print(f"\n| figure | A median | B median | B / A | A runs | B runs |\n|---|---|---|---|---|---|")
    for k in results[args.a]:
        a, b = statistics.median(results[args.a][k]), statistics.median(results[args.b][k])
        ratio = b / a if a else float("nan")
        fmt = lambda xs: ", ".join(f"{x:.3g}" for x in xs)
        print(f"| {k} | {a:.3g} | {b:.3g} | {ratio:.2f} | {fmt(results[args.a][k])} | {fmt(results[args.b][k])} |")


if __name__ == "__main__":
    main()

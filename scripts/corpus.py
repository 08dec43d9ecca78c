#!/usr/bin/env python3
"""`make corpus`: records real programs under Xvfb, each with fixed actions and timing, and
measures x11vnc on the same live screen at the same time.

For each workload it starts the program on a fresh 1600x1200 Xvfb screen, lets it settle, then
at once:
  - `framewire record` writes what the screen shows to corpus/NAME.fwrec (60 captures a second);
  - x11vnc serves the same screen to scripts/vnc_meter.py, a viewer asking for lossless Tight in
    colour, which counts the bytes of every update into corpus/NAME.vnc.json;
  - the actions run (xdotool: wheel clicks, keystrokes, window moves).
At the end it runs `framewire bench codec --input` on the recordings and prints both, side by
side, as a Markdown table (also written to corpus/RESULTS.md).

The recordings are data, not code: they stay out of git (corpus/ is ignored), and this script
makes them again in about two minutes. Needs root or sudo once, for Debian's packages.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vnc_meter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
W, H = 1600, 1200
DOC = Path("/usr/share/doc/python3.11/html/library/stdtypes.html")
TEXT = Path("/usr/share/common-licenses/GPL-3")

# Debian packages each tool comes from.
PACKAGES = {
    "Xvfb": "xvfb",
    "xdotool": "xdotool",
    "xterm": "xterm",
    "ffplay": "ffmpeg",
    "x11vnc": "x11vnc",
    "chromium": "chromium",
    "glxgears": "mesa-utils",
}


def log(msg: str) -> None:
    print(f"corpus: {msg}", file=sys.stderr, flush=True)


def ensure_packages() -> None:
    need = sorted({p for cmd, p in PACKAGES.items() if shutil.which(cmd) is None})
    if not DOC.exists():
        need.append("python3.11-doc")
    if not need:
        return
    log(f"installing Debian packages: {' '.join(need)}")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(
        sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def free_display() -> int:
    for n in range(60, 200):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise SystemExit("corpus: no free X display number between :60 and :199")


class Screen:
    """An Xvfb screen with a black root window, and the programs started on it."""

    def __init__(self) -> None:
        self.n = free_display()
        self.env = dict(os.environ, DISPLAY=f":{self.n}")
        self.procs: list[subprocess.Popen] = []
        self.xvfb = subprocess.Popen(
            ["Xvfb", f":{self.n}", "-screen", "0", f"{W}x{H}x24", "-nolisten", "tcp", "-br"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            if Path(f"/tmp/.X11-unix/X{self.n}").exists():
                return
            time.sleep(0.05)
        raise SystemExit(f"corpus: Xvfb :{self.n} did not start")

    def start(self, argv: list[str]) -> subprocess.Popen:
        p = subprocess.Popen(
            argv,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(p)
        return p

    def xdotool(self, *args: str) -> str:
        return subprocess.run(
            ["xdotool", *args], env=self.env, check=True, capture_output=True, text=True
        ).stdout.strip()

    def window(self, klass: str) -> str:
        """The first visible window of `klass`, once it is mapped."""
        out = subprocess.run(
            ["xdotool", "search", "--sync", "--onlyvisible", "--class", klass],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        return out[0]

    def stop_programs(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def close(self) -> None:
        self.stop_programs()
        self.xvfb.terminate()
        self.xvfb.wait()


def chromium(s: Screen, profile: Path) -> None:
    s.start(
        [
            "chromium",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-features=Translate",
            "--password-store=basic",
            "--test-type",  # no banner about --no-sandbox
            "--window-position=0,0",
            f"--window-size={W},{H}",
            f"file://{DOC}",
        ]
    )
    s.window("chromium")


def xterm(s: Screen, geometry: str, command: str) -> str:
    s.start(
        ["xterm", "-fa", "DejaVu Sans Mono", "-fs", "11", "-geometry", geometry, "-e", "sh", "-c", command]
    )
    return s.window("xterm")


# Each workload: how to set the screen up, and the actions, run while recording.
def browser_scroll_setup(s: Screen, tmp: Path) -> None:
    chromium(s, tmp / "chromium")
    s.xdotool("mousemove", "800", "700")


def browser_scroll(s: Screen, tmp: Path) -> None:
    for _ in range(60):  # a wheel click every 100 ms, down the page
        s.xdotool("click", "5")
        time.sleep(0.1)


def terminal_setup(s: Screen, tmp: Path) -> None:
    # Scrolling output: a licence text, a line every 10 ms, once the recording has begun.
    script = (
        f"while [ ! -e {tmp / 'go'} ]; do sleep 0.05; done; python3 -u -c \"import sys,time\n"
        f"for l in open('{TEXT}'): sys.stdout.write(l); sys.stdout.flush(); time.sleep(0.01)\"; sleep 60"
    )
    xterm(s, "172x62+0+0", script)


def terminal(s: Screen, tmp: Path) -> None:
    (tmp / "go").touch()
    time.sleep(7)


def typing_setup(s: Screen, tmp: Path) -> None:
    f = tmp / "notes.txt"
    f.write_text(TEXT.read_text()[:6000])
    wid = xterm(s, "172x62+0+0", f"vim -u NONE -N -c 'set number' {f}")
    time.sleep(1)
    s.xdotool("windowfocus", "--sync", wid)
    s.xdotool("key", "G", "o")


def typing(s: Screen, tmp: Path) -> None:
    s.xdotool(
        "type",
        "--delay",
        "110",
        "The quick brown fox jumps over the lazy dog, and types a line at a steady pace.",
    )


def drag_setup(s: Screen, tmp: Path) -> None:
    chromium(s, tmp / "chromium")
    xterm(s, "90x28+40+200", f"cat {TEXT} | head -40; sleep 600")


def drag(s: Screen, tmp: Path) -> None:
    wid = s.window("xterm")
    x, y = 40, 200
    for i in range(360):  # 6 s of moves, a step each 16 ms: right and down, then back
        dx, dy = (6, 2) if i < 180 else (-6, -2)
        x, y = x + dx, y + dy
        s.xdotool("windowmove", wid, str(x), str(y))
        time.sleep(0.016)


def video_setup(s: Screen, tmp: Path) -> None:
    s.start(
        [
            "ffplay", "-loglevel", "error", "-an", "-noborder", "-left", "0", "-top", "0",
            "-x", str(W), "-y", str(H), "-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30",
        ]
    )
    time.sleep(2)


def video(s: Screen, tmp: Path) -> None:
    time.sleep(4)


def fractal_setup(s: Screen, tmp: Path) -> None:
    # A zoom into the Mandelbrot set: smooth colour that changes everywhere in every frame, as
    # a photograph or a film does, where testsrc2 is flat colour and noise.
    s.start(
        [
            "ffplay", "-loglevel", "error", "-an", "-noborder", "-left", "0", "-top", "0",
            "-x", str(W), "-y", str(H), "-f", "lavfi", "-i", f"mandelbrot=size={W}x{H}:rate=30",
        ]
    )
    time.sleep(2)


def gears_setup(s: Screen, tmp: Path) -> None:
    # Flat-shaded gears that turn, in software GL: only their edges change, with no pattern
    # an XOR can match (the first real program where framewire sent more than x11vnc).
    s.start(["glxgears", "-geometry", f"{W}x{H}+0+0"])
    time.sleep(1)


WORKLOADS = {
    # name: (setup, actions, seconds recorded)
    "browser-scroll": (browser_scroll_setup, browser_scroll, 8.0),
    "terminal": (terminal_setup, terminal, 8.0),
    "typing": (typing_setup, typing, 10.0),
    "window-drag": (drag_setup, drag, 8.0),
    "video": (video_setup, video, 5.0),
    "fractal": (fractal_setup, video, 5.0),
    "gears": (gears_setup, video, 5.0),
}


# A program named on the command line (`--program NAME=COMMAND`): started on the fresh screen,
# given time to paint, then driven by `--actions` (a shell command with DISPLAY set) or, by
# default, by the generic actions below, which most programs answer to.
def program_workload(name: str, command: str, actions: str | None, seconds: float, settle: float):
    def setup(s: Screen, tmp: Path) -> None:
        p = s.start(["sh", "-c", command])
        time.sleep(settle)
        # A program that could not start would leave an empty screen to measure.
        if p.poll() not in (None, 0):
            raise SystemExit(f"corpus: {name}: `{command}` exited with {p.returncode} before recording")
        # The program's window takes the keyboard, wherever it opened (there is no window
        # manager to give it focus).
        with contextlib.suppress(subprocess.CalledProcessError):
            wids = s.xdotool("search", "--onlyvisible", "--name", ".").split()
            if wids:
                s.xdotool("windowfocus", wids[-1])
        s.xdotool("mousemove", str(W // 2), str(H // 2))

    def act(s: Screen, tmp: Path) -> None:
        if actions is not None:
            done = subprocess.run(["sh", "-c", actions], env=s.env, timeout=seconds + 30)
            if done.returncode != 0:
                log(f"the actions exited with {done.returncode}")
            return
        generic_actions(s, seconds)

    return (setup, act, seconds)


def generic_actions(s: Screen, seconds: float) -> None:
    """Wheel clicks down, then Page Down with arrow keys, then typing: a third of the time each."""
    end = time.monotonic() + seconds - 0.5
    third = (seconds - 0.5) / 3
    phase_end = time.monotonic() + third
    while time.monotonic() < min(phase_end, end):
        s.xdotool("click", "5")
        time.sleep(0.1)
    phase_end += third
    while time.monotonic() < min(phase_end, end):
        s.xdotool("key", "Next")
        time.sleep(0.25)
        s.xdotool("key", "Down", "Down", "Right")
        time.sleep(0.1)
    while time.monotonic() < end:
        s.xdotool("type", "--delay", "110", "framewire ")


@contextlib.contextmanager
def staged(out: Path, name: str, tag: str):
    """A fresh screen with the workload's program set up and settled (fonts, first paint);
    yields the screen and a scratch directory, and cleans both up."""
    setup = WORKLOADS[name][0]
    tmp = out / f".tmp-{tag}-{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    s = Screen()
    try:
        setup(s, tmp)
        time.sleep(2)
        yield s, tmp
    finally:
        s.close()
        shutil.rmtree(tmp, ignore_errors=True)


def record_one(bin: Path, out: Path, name: str, vnc: bool) -> None:
    _, actions, seconds = WORKLOADS[name]
    with staged(out, name, "rec") as (s, tmp):
        vnc_result: dict = {}
        meter = None
        if vnc:
            port = 5900 + s.n
            s.start(
                ["x11vnc", "-display", f":{s.n}", "-rfbport", str(port), "-localhost", "-nopw",
                 "-forever", "-shared", "-quiet", "-norc"]
            )
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            ready = threading.Event()

            def run_meter() -> None:
                try:
                    vnc_result.update(vnc_meter.meter(port, seconds, ready=ready))
                except (OSError, vnc_meter.ProtocolError) as e:
                    vnc_result["error"] = str(e)
                    ready.set()

            meter = threading.Thread(target=run_meter)
            meter.start()
            ready.wait(30)
        rec = subprocess.Popen(
            [str(bin), "record", "--source", f"x11:{s.n}", "--no-cursor", "--force",
             "--seconds", str(seconds), "--out", str(out / f"{name}.fwrec")],
            env=s.env,
            stderr=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)
        actions(s, tmp)
        summary, _ = rec.communicate(timeout=seconds + 60)
        if rec.returncode != 0:
            raise SystemExit(f"corpus: framewire record failed on {name}")
        log(f"{name}: {summary.strip()}")
        if meter is not None:
            meter.join(seconds + 30)
            if "error" in vnc_result:
                log(f"{name}: x11vnc meter: {vnc_result['error']}")
            (out / f"{name}.vnc.json").write_text(json.dumps(vnc_result, indent=2))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live(bin: Path, out: Path, name: str, colour: bool | None, serve_args: list[str], realtime: bool = False) -> dict:
    """The workload live: `framewire serve` on the Xvfb screen at 60 fps with one headless
    viewer (colour or grey) on loopback, while the actions run. Returns the server's CPU (% of
    one core, over the actions) and the viewer's capture-to-applied latency."""
    actions = WORKLOADS[name][1]
    with staged(out, name, "live") as (s, tmp):
        port = 20000 + s.n
        srv = s.start(
            [str(bin), "serve", "--source", f"x11:{s.n}", "--no-cursor", "--view-only", "--port", str(port),
             "--no-daylight", "--no-sensors", "--no-http", "--no-touch", "--fps", "60",
             "--control-socket", str(tmp / "ctl.sock"), "--status-file", str(tmp / "status"), *serve_args]
            + (["--realtime"] if realtime else [])
        )
        time.sleep(1)
        view = subprocess.Popen(
            [str(bin), "view", "--headless", "--port", str(port), "--interval", "1000"]
            + (["--grey"] if colour is False else [])
            + (["--realtime"] if realtime else []),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )
        time.sleep(1.5)
        # The viewer's timings from here on: the actions, not its join (a keyframe and the
        # frames queued behind it, which a 600-frame window of a short workload still held).
        # Only to a viewer that catches SIGUSR1 (an older binary's would end).
        if catches(view.pid, signal.SIGUSR1):
            os.kill(view.pid, signal.SIGUSR1)
        else:
            log("the viewer does not catch SIGUSR1: its timings include its join")
        c0, t0 = cpu_seconds(srv.pid), time.monotonic()
        actions(s, tmp)
        c1, t1 = cpu_seconds(srv.pid), time.monotonic()
        # colour None: a binary from before colour, whose viewer is grey.
        stages = host_stages(bin, tmp / "ctl.sock", colour is True)
        os.killpg(view.pid, signal.SIGINT)
        line = view.communicate(timeout=10)[0].strip().splitlines()[-1]
        e2e = line.split("e2e avg/p99 ")[1].split("ms")[0].split("/")
        return {"cpu_percent": 100 * (c1 - c0) / (t1 - t0), "e2e_avg_ms": float(e2e[0]), "e2e_p99_ms": float(e2e[1]),
                "viewer": line, "stages": stages}


def catches(pid: int, sig: int) -> bool:
    """Whether a process catches a signal (SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def host_stages(bin: Path, sock: Path, colour: bool) -> str:
    """The host's own p99 per stage over its last frames (`framewire latency`), to tell where a
    live tail comes from: capture (the X server's copy), the conversion, the encode, the send."""
    r = subprocess.run([str(bin), "latency", "--json", "--control-socket", str(sock)],
                       capture_output=True, text=True, timeout=10)
    names = ("capture", "colour_planes", "colour_compress", "send") if colour else (
        "capture", "grey", "delta_compress", "send")
    try:
        j = json.loads(r.stdout) if r.returncode == 0 else None
        return " / ".join(f"{j[k]['p99']:.2f}" for k in names) if j else "–"
    except (ValueError, KeyError, TypeError) as e:
        # An older binary's report, or none: the live figures above still stand.
        log(f"framewire latency gave no stage figures ({e!r})")
        return "–"


def report(bin: Path, out: Path, names: list[str]) -> str:
    inputs = ",".join(str(out / f"{n}.fwrec") for n in names)

    def bench(codec: str) -> list:
        cmd = [str(bin), "bench", "codec", "--json", "--codec", codec, "--input", inputs]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    # What `framewire serve` sends a colour viewer by default: LZ4, with the deltas that carry
    # predicted rectangles in zstd ("served"). Beside it, LZ4 alone (moved rectangles, no
    # predicted rectangles) and `serve --codec zstd` (zstd + predicted rectangles throughout).
    rows, zstd = bench("lz4"), bench("zstd")
    lines = [
        "| workload | pictures changed | grey, row deltas | grey, moved rects | colour, LZ4 moved rects | colour as served | x11vnc Tight (colour), updates | x11vnc per update | served ÷ x11vnc | served kB/s | x11vnc kB/s | colour, zstd + predicted | ÷ x11vnc |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, r, z in zip(names, rows, zstd):
        rows_b = r["rows"]["bytes_per_changed_frame_mean"]
        rects_b = r["rects"]["bytes_per_changed_frame_mean"]
        colour_b = r["colour"]["bytes_per_changed_frame_mean"]
        served_b = r["colour_served"]["bytes_per_changed_frame_mean"]
        seconds = WORKLOADS[n][2]
        served_rate = served_b * r["changed_frames"] / seconds / 1000
        v = {}
        vf = out / f"{n}.vnc.json"
        if vf.exists():
            v = json.loads(vf.read_text())
        pred_b = z["colour_predicted"]["bytes_per_changed_frame_mean"]
        if v.get("updates"):
            vb = v["bytes_per_update_mean"]
            vnc = f"{v['updates']} | {vb:,.0f} B | {served_b / vb:.2f} | {served_rate:,.0f} | {v['bytes'] / v['seconds'] / 1000:,.0f}"
            pred = f"{pred_b:,.0f} B | {pred_b / vb:.2f}"
        else:
            vnc = f"– | – | – | {served_rate:,.0f} | –"
            pred = f"{pred_b:,.0f} B | –"
        lines.append(
            f"| {n} | {r['changed_frames']} | {rows_b:,.0f} B | {rects_b:,.0f} B | {colour_b:,.0f} B | {served_b:,.0f} B | {vnc} | {pred} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description="Record real programs under Xvfb (make corpus).")
    ap.add_argument("--bin", type=Path, default=ROOT / "target/release/framewire")
    ap.add_argument("--out", type=Path, default=ROOT / "corpus")
    ap.add_argument("--only", help="comma-separated workloads [default: all]: " + ", ".join(WORKLOADS))
    ap.add_argument("--no-vnc", action="store_true", help="do not measure x11vnc alongside")
    ap.add_argument("--report-only", action="store_true", help="only measure existing recordings")
    ap.add_argument("--live", action="store_true",
                    help="also run each workload live through framewire serve with one headless viewer, colour then grey: server CPU and capture-to-applied latency")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="with --live, pass ARG to framewire serve (repeatable), e.g. --serve-arg=--no-predicted-rects")
    ap.add_argument("--realtime", action="store_true",
                    help="with --live, run the server and the viewer with --realtime (SCHED_FIFO; needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO)")
    ap.add_argument("--live-grey-only", action="store_true",
                    help="with --live, one grey run per workload (for a --bin from before colour)")
    ap.add_argument("--program", action="append", default=[], metavar="NAME=COMMAND",
                    help="a workload of your own (repeatable): COMMAND runs on a fresh screen, then the actions run while it is recorded; only these are recorded unless --only names others")
    ap.add_argument("--actions", metavar="COMMAND",
                    help="with --program, a shell command (DISPLAY set; xdotool is there) that drives the program while it is recorded [default: wheel down, Page Down and arrows, then typing, a third of the time each]")
    ap.add_argument("--seconds", type=float, default=8.0, help="with --program, seconds recorded [default: 8]")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="with --program, seconds the program is given to open and paint before recording [default: 3]")
    a = ap.parse_args()
    for spec in a.program:
        name, eq, command = spec.partition("=")
        if not eq or not name or not command.strip() or "," in name or "/" in name:
            ap.error(f"--program wants NAME=COMMAND with a plain name, got {spec!r}")
        if name in WORKLOADS:
            ap.error(f"--program {name}: that name is a built-in workload")
        WORKLOADS[name] = program_workload(name, command, a.actions, a.seconds, a.settle)
    if a.actions and not a.program:
        ap.error("--actions drives a --program; the built-in workloads have their own")
    default = [p.partition("=")[0] for p in a.program] or list(WORKLOADS)
    names = a.only.split(",") if a.only else default
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    if not a.bin.exists():
        ap.error(f"{a.bin} does not exist: run `make build` first")
    a.out.mkdir(parents=True, exist_ok=True)
    if not a.report_only:
        ensure_packages()
        for i, n in enumerate(names):
            log(f"[{i + 1}/{len(names)}] recording {n} ({WORKLOADS[n][2]:.0f} s)")
            record_one(a.bin, a.out, n, not a.no_vnc)
    table = report(a.bin, a.out, names)
    if a.live:
        live_rows = ["", "| workload | viewer | server CPU, % of one core | capture→applied avg | p99 | host p99, ms: capture / convert / encode / send |",
                     "|---|---|---|---|---|---|"]
        for n in names:
            # An older binary without colour: its viewer is grey without being asked.
            for colour in ((None,) if a.live_grey_only else (True, False)):
                r = live(a.bin, a.out, n, colour, a.serve_arg, a.realtime)
                kind = "colour" if colour else "grey"
                log(f"{n} live ({kind}): {r['viewer']}")
                live_rows.append(f"| {n} | {kind} | {r['cpu_percent']:.1f} | {r['e2e_avg_ms']:.2f} ms | {r['e2e_p99_ms']:.2f} ms | {r['stages']} |")
        table += "\n" + "\n".join(live_rows)
    (a.out / "RESULTS.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the real Daylight app would show, modelled from its decoder's rules
(daylight_app_model.py), equals what the host sent, at every size and with every --codec."""
import os
import stat
import time

import pytest

from daylight_app_model import DaylightAppModel
from fwhost import host

SIZES = [(1, 1), (160, 120), (1024, 768), (1600, 1200)]
CODECS = ["lz4", "zstd", "raw"]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_app_shows_every_picture_the_host_sent(size, codec):
    w, h = size
    frames = 40 if w * h > 1_000_000 else 60
    # A single pixel changes only in the moving picture; elsewhere typing makes small deltas.
    scene = "video" if w * h == 1 else "typing"
    with host("--scene", scene, "--resolution", f"{w}x{h}", "--codec", codec) as fw:
        app = DaylightAppModel(fw.connect())
        app.run(frames)
        app.sock.close()
        wrong = fw.not_sent(app.shown)
    assert (app.width, app.height) == (w, h)
    assert app.brightness == 128, "brightness is sent on connect"
    assert app.skipped == 0, f"{app.skipped} deltas the app would throw away"
    assert app.undecodable == 0
    assert not wrong, f"{len(wrong)} of {len(app.shown)} pictures differ from the host's: {wrong[:3]}"
    if w * h >= 1024 * 768:
        # Large pictures must still get real deltas, not a keyframe every frame.
        assert app.deltas > app.keyframes, (app.deltas, app.keyframes)


def test_a_resolution_change_is_followed_by_a_keyframe():
    with host("--scene", "typing", "--resolution", "160x120") as fw:
        app = DaylightAppModel(fw.connect())
        app.run(10)
        assert fw.control("RESOLUTION 200x150") == "OK 200x150 (restarting)\n"
        before = len(app.shown)
        while (app.width, app.height) != (200, 150):
            app.step()
        app.run(before + 20)
        app.sock.close()
        wrong = fw.not_sent(app.shown)
    assert not wrong and app.skipped == 0


def test_backlight_turns_off_as_brightness_zero_and_restores():
    with host("--scene", "idle", "--resolution", "64x48") as fw:
        app = DaylightAppModel(fw.connect())
        app.run(1)
        assert fw.control("BRIGHTNESS 180") == "OK 180\n"
        assert fw.control("BACKLIGHT off") == "OK off\n"
        app.sock.settimeout(5)
        while app.brightness != 0:
            app.step()
        assert fw.control("BACKLIGHT toggle") == "OK on\n"
        while app.brightness != 180:
            app.step()
        assert fw.control("BRIGHTNESS") == "OK 180\n"


FAKE_ADB = """#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  version) echo "Android Debug Bridge version 1.0.41" ;;
  devices) printf 'List of devices attached\\nDC1SERIAL\\tdevice\\n' ;;
  "reverse --list") cat "{dir}/reverse" 2>/dev/null ;;
  reverse\\ tcp:*) echo "UsbFfs $2 $3" >> "{dir}/reverse" ;;
  "shell settings get system screen_brightness") echo 77 ;;
  "shell settings get system screen_brightness_amber_rate") echo 600 ;;
  "shell settings put system screen_brightness_amber_rate "*) ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
"""


def test_adb_reads_the_tablet_and_writes_warmth(tmp_path):
    d = str(tmp_path)
    log = os.path.join(d, "log")
    adb = os.path.join(d, "adb")
    with open(adb, "w") as f:
        f.write(FAKE_ADB.format(log=log, dir=d))
    os.chmod(adb, stat.S_IRWXU)
    env = dict(os.environ, PATH=d + os.pathsep + os.environ["PATH"])
    with host("--scene", "idle", "--resolution", "64x48", "--adb", env=env) as fw:
        deadline = time.time() + 10
        # The tablet's own values become the current ones when it is seen.
        while fw.control("BRIGHTNESS") != "OK 77\n":
            assert time.time() < deadline, "the tablet's brightness was not read"
            time.sleep(0.05)
        assert fw.control("WARMTH") == "OK 255\n", "amber rate 600 is warmth 255"
        assert fw.control("WARMTH 300") == "OK 255\n"
        assert fw.control("WARMTH 40") == "OK 40\n"
        want = "shell settings put system screen_brightness_amber_rate 40"
        while want not in open(log).read():
            assert time.time() < deadline, open(log).read()
            time.sleep(0.05)
        # A new tablet connection starts at the tablet's brightness.
        app = DaylightAppModel(fw.connect())
        app.run(1)
        assert app.brightness == 77
    calls = open(log).read().splitlines()
    assert "shell settings put system screen_brightness_amber_rate 255" in calls
    assert any(c.startswith("reverse tcp:") for c in calls)


def test_adb_missing_is_a_clear_error(tmp_path):
    from fwhost import BINARY
    import subprocess
    empty = str(tmp_path)
    r = subprocess.run([BINARY, "serve", "--adb", "--port", "0", "--daylight-port", "0",
                        "--no-sensors", "--no-http", "--no-touch"],
                       env=dict(os.environ, PATH=empty), capture_output=True, text=True, timeout=20)
    assert r.returncode != 0
    assert "adb not found" in r.stderr and "platform tools" in r.stderr, r.stderr

"""An X client for the browser input test, independent of framewire: it maps a window over
the whole screen and reports, one line each on stdout, `ready`, every button press and release
on it (`press X Y BUTTON`, `release X Y BUTTON`), and, when a line `pointer` arrives on stdin,
where the X pointer is (`pointer X Y`).

Usage: python xprobe.py DISPLAY
"""

import select
import sys

from Xlib import X, display


def main() -> None:
    d = display.Display(sys.argv[1])
    screen = d.screen()
    root = screen.root
    win = root.create_window(
        0, 0, screen.width_in_pixels, screen.height_in_pixels, 0, screen.root_depth,
        X.InputOutput, X.CopyFromParent,
        background_pixel=screen.white_pixel,
        override_redirect=True,
        event_mask=X.ButtonPressMask | X.ButtonReleaseMask | X.StructureNotifyMask,
    )
    win.map()
    d.sync()
    while True:
        e = d.next_event()
        if e.type == X.MapNotify:
            break
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([d.fileno(), sys.stdin], [], [], 1.0)
        if sys.stdin in ready:
            line = sys.stdin.readline()
            if not line:
                return
            if line.strip() == "pointer":
                p = root.query_pointer()
                print(f"pointer {p.root_x} {p.root_y}", flush=True)
        while d.pending_events():
            e = d.next_event()
            if e.type == X.ButtonPress:
                print(f"press {e.event_x} {e.event_y} {e.detail}", flush=True)
            elif e.type == X.ButtonRelease:
                print(f"release {e.event_x} {e.event_y} {e.detail}", flush=True)


if __name__ == "__main__":
    main()

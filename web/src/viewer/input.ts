// Pointer, wheel and keyboard events on the viewer's canvas, turned into v1 Input packets in
// picture pixel coordinates. The host decides what they do (and ignores them for a viewer
// without the control token); touches are marked so the host can tell a tap from a drag.

import { input, InputKind } from "../common/v1";

/** Pointer codes: the button (1 left, 2 middle, 3 right), plus this bit for a touch. */
export const TOUCH = 0x100;

const NAMED: Record<string, number> = {
  Enter: 0xff0d, Backspace: 0xff08, Tab: 0xff09, Escape: 0xff1b, Delete: 0xffff,
  Home: 0xff50, ArrowLeft: 0xff51, ArrowUp: 0xff52, ArrowRight: 0xff53, ArrowDown: 0xff54,
  PageUp: 0xff55, PageDown: 0xff56, End: 0xff57, Insert: 0xff63,
  Shift: 0xffe1, Control: 0xffe3, CapsLock: 0xffe5, Alt: 0xffe9, Meta: 0xffeb, AltGraph: 0xfe03,
  F1: 0xffbe, F2: 0xffbf, F3: 0xffc0, F4: 0xffc1, F5: 0xffc2, F6: 0xffc3,
  F7: 0xffc4, F8: 0xffc5, F9: 0xffc6, F10: 0xffc7, F11: 0xffc8, F12: 0xffc9,
};

/** The X11 keysym of a KeyboardEvent.key, or 0 when it has none. */
export function keysym(key: string): number {
  const named = NAMED[key];
  if (named !== undefined) return named;
  const cps = [...key];
  if (cps.length !== 1) return 0;
  const cp = cps[0]!.codePointAt(0)!;
  // Latin-1 keysyms equal their code points; the rest of Unicode is 0x01000000 + code point.
  if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff)) return cp;
  return 0x0100_0000 + cp;
}

export function attachInput(canvas: HTMLCanvasElement, send: (b: Uint8Array) => void, wantsFullscreen: (e: PointerEvent) => boolean): void {
  const at = (e: { clientX: number; clientY: number }): [number, number] => {
    // The canvas is drawn with object-fit: contain, so the picture is the centred box of its
    // aspect ratio inside the element.
    const r = canvas.getBoundingClientRect();
    const scale = Math.min(r.width / canvas.width, r.height / canvas.height) || 1;
    const left = r.left + (r.width - canvas.width * scale) / 2;
    const top = r.top + (r.height - canvas.height * scale) / 2;
    const x = Math.floor((e.clientX - left) / scale);
    const y = Math.floor((e.clientY - top) / scale);
    return [Math.max(0, Math.min(canvas.width - 1, x)), Math.max(0, Math.min(canvas.height - 1, y))];
  };
  const code = (e: PointerEvent): number => (e.button === 1 ? 2 : e.button === 2 ? 3 : 1) | (e.pointerType === "touch" ? TOUCH : 0);
  // Moves are coalesced to one per animation frame: the host needs where the pointer is now.
  let pending: [number, number, number] | null = null;
  const flushMove = (): void => {
    if (pending) send(input(InputKind.PointerMove, pending[0], pending[1], pending[2]));
    pending = null;
  };
  canvas.addEventListener("pointerdown", (e) => {
    if (wantsFullscreen(e)) return;
    canvas.setPointerCapture(e.pointerId);
    const [x, y] = at(e);
    flushMove();
    send(input(InputKind.PointerDown, x, y, code(e)));
    e.preventDefault();
  });
  canvas.addEventListener("pointermove", (e) => {
    const [x, y] = at(e);
    if (pending === null) requestAnimationFrame(flushMove);
    pending = [x, y, e.pointerType === "touch" ? TOUCH : 0];
  });
  const up = (e: PointerEvent): void => {
    const [x, y] = at(e);
    flushMove();
    send(input(InputKind.PointerUp, x, y, code(e)));
  };
  canvas.addEventListener("pointerup", up);
  canvas.addEventListener("pointercancel", up);
  canvas.addEventListener("contextmenu", (e) => e.preventDefault());
  canvas.addEventListener(
    "wheel",
    (e) => {
      const k = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? canvas.height : 1;
      send(input(InputKind.Wheel, Math.round(e.deltaX * k), Math.round(e.deltaY * k), 0));
      e.preventDefault();
    },
    { passive: false },
  );
  const key = (kind: number) => (e: KeyboardEvent) => {
    const s = keysym(e.key);
    if (s === 0) return;
    send(input(kind, 0, 0, s));
    e.preventDefault();
  };
  window.addEventListener("keydown", key(InputKind.KeyDown));
  window.addEventListener("keyup", key(InputKind.KeyUp));
}

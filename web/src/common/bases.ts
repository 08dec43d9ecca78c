// Named bases (capability 64, spec/PROTOCOL.md "Named bases"), the viewer's side: frames come
// on WebTransport streams of their own, so they may arrive out of order, and any may be lost.
// Every delta names the checksum of the picture it applies to. The viewer keeps its last
// pictures; holds a frame whose base has not arrived yet, for a while (not when that base is
// the picture of a frame that did not apply and the frame arrived within the smallest round
// trip after this viewer answered it); and drops a frame that a newer one overtook. The same
// rules as crates/session/src/viewer.rs.

import * as v1 from "./v1";
import { sameU64 } from "./checksum";
import type { Picture, SavedPicture } from "./picture";

/** Pictures kept after they were verified: more than a host may have in flight. */
const KEPT = 10;
/** How long a frame waits for its base, at least, and in round trips. */
const BASE_WAIT_MS = 25;
const BASE_WAIT_RTTS = 2;
/**
 * How long a frame waits for its base, at least, while the viewer holds no picture yet: its
 * first keyframe is on its way, and frames behind it overtake it on their own streams.
 * Reported missing, they were acknowledged first and the host took the keyframe's bytes for
 * settled (crates/session/src/viewer.rs, FIRST_PICTURE_WAIT_US). Once a picture is held, the
 * usual wait holds for frames already waiting too.
 */
const FIRST_PICTURE_WAIT_MS = 1000;
/** Frames held at once; beyond, the oldest is handled (its base reported missing). */
const WAITING_MAX = 4;
/**
 * Pictures of frames that did not apply, remembered at most. A frame named against one that
 * arrives within the smallest round trip measured after this viewer answered it was made
 * before the host learned of it, against a picture this viewer dropped: it is handled
 * (reported missing) at once, not held. Later the picture may come again (a repair of a still
 * screen makes the same one): such a frame waits. Before a round trip is measured, none is.
 */
const GIVEN_UP = 16;

/** One transport stream's packets (a frame, with its stream description when it carries one). */
export interface Unit {
  recvMs: number;
  recvUs: number;
  seq: number;
  packets: v1.Packet[];
}

interface Waiting extends Unit {
  base: v1.U64;
  until: number;
  /** The usual wait's end, which holds once a picture is held. */
  usual: number;
}

/** When a waiting unit's wait is over: the usual wait once a picture is held. */
function due(w: Waiting, pictured: boolean): number {
  return pictured ? w.usual : w.until;
}

/** The pictures this viewer kept, by checksum, oldest first. */
export class KeptPictures {
  private kept: Array<{ sum: v1.U64; saved: SavedPicture }> = [];

  clear(): void {
    this.kept = [];
  }

  holds(sum: v1.U64): boolean {
    return this.kept.some((k) => sameU64(k.sum, sum));
  }

  /** No picture is kept. */
  get empty(): boolean {
    return this.kept.length === 0;
  }

  /**
   * Keeps `p` (verified, checksum `sum`), reusing the oldest one's buffers. A picture already
   * kept (one that came back) becomes the newest kept again: the host may make its next frames
   * against it, so it must outlast the pictures before it.
   */
  keep(p: Picture, sum: v1.U64): void {
    const i = this.kept.findIndex((x) => sameU64(x.sum, sum));
    if (i >= 0) {
      this.kept.push(...this.kept.splice(i, 1));
      return;
    }
    const reuse = this.kept.length >= KEPT ? this.kept.shift()!.saved : undefined;
    this.kept.push({ sum, saved: p.save(reuse) });
  }

  /**
   * Makes the kept picture with checksum `sum` the picture, and, when it could, the newest
   * kept; false when none is kept (or it could not be restored). The host names it as a base while it has heard of nothing newer (its stall
   * probes while this viewer's ACKs are held up), so it must outlast the pictures applied
   * since, as crates/session/src/viewer.rs keeps it.
   */
  restore(p: Picture, sum: v1.U64): boolean {
    const i = this.kept.findIndex((x) => sameU64(x.sum, sum));
    const k = this.kept[i];
    if (k === undefined || !p.restore(k.saved)) return false;
    this.kept.splice(i, 1);
    this.kept.push(k);
    return true;
  }
}

/** Cuts one stream's bytes into its packets; every byte must belong to a whole packet. */
export function unitPackets(bytes: Uint8Array): v1.Packet[] {
  const d = new v1.Decoder();
  d.push(bytes);
  const out: v1.Packet[] = [];
  for (let p = d.next(); p !== null; p = d.next()) out.push(p);
  if (d.pending() !== 0) throw new v1.ProtocolError("a frame stream ended inside a packet");
  return out;
}

/** The seq of the frame or Unchanged a unit carries, and what it needs held (its base). */
function describe(packets: v1.Packet[]): { seq: number | null; base: v1.U64 | null } {
  for (const p of packets) {
    if (p.type === v1.T.Frame) return { seq: p.seq, base: p.base };
    if (p.type === v1.T.Unchanged) return { seq: p.seq, base: p.checksum };
  }
  return { seq: null, base: null };
}

/**
 * Orders units for the viewer: `handle` gets each unit's packets when its base is held (or its
 * time is up), never one older than a unit it applied. It says whether it applied the unit's
 * frame: a keyframe slower than the deltas made against it (a large picture on a slow link)
 * still applies after they were reported missing, and it is the repair the host waits on.
 */
export class UnitOrder {
  /** Units dropped because a newer frame was applied first. */
  stale = 0;
  private newest = -1;
  private waiting: Waiting[] = [];
  /** Pictures given up, with when (ms), newest last. */
  private givenUp: Array<{ sum: v1.U64; atMs: number }> = [];
  /** The smallest round trip measured, as the last push gave it (ms). */
  private rttMs = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    /** Whether the picture held, or a kept one, has this checksum. */
    private readonly holds: (sum: v1.U64) => boolean,
    private readonly handle: (u: Unit) => boolean,
    private readonly nowMs: () => number,
    /** Whether any picture is held or kept (none: the first keyframe is on its way). */
    private readonly hasPicture: () => boolean = () => true,
  ) {}

  reset(): void {
    this.newest = -1;
    this.waiting = [];
    this.givenUp = [];
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Whether a frame named against `sum` that arrived at `recvMs` was made against a picture given up. */
  private gaveUp(sum: v1.U64, recvMs: number): boolean {
    if (this.rttMs <= 0) return false;
    return this.givenUp.some((g) => sameU64(g.sum, sum) && recvMs < g.atMs + this.rttMs);
  }

  /** A unit arrived. `rttMs` is the smallest round trip measured (0 when none yet). */
  push(recvMs: number, recvUs: number, packets: v1.Packet[], rttMs: number): void {
    this.rttMs = rttMs;
    const { seq, base } = describe(packets);
    if (seq === null) {
      this.handle({ recvMs, recvUs, seq: -1, packets });
      return;
    }
    if (seq <= this.newest) {
      this.stale++;
      return;
    }
    if (base !== null && !this.holds(base)) {
      const usual = recvMs + Math.max(BASE_WAIT_MS, BASE_WAIT_RTTS * rttMs);
      const until = this.hasPicture() ? usual : Math.max(usual, recvMs + FIRST_PICTURE_WAIT_MS);
      this.waiting.push({ recvMs, recvUs, seq, packets, base, until, usual });
      if (this.waiting.length > WAITING_MAX) this.run(this.waiting.shift()!);
      this.release();
      return;
    }
    this.run({ recvMs, recvUs, seq, packets });
    this.release();
  }

  private run(u: Unit): void {
    if (u.seq <= this.newest) {
      this.stale++;
      return;
    }
    const applied = this.handle(u);
    if (applied) this.newest = u.seq;
    // Applied with nothing given up (nearly always): nothing to forget, no frame to look for.
    if (applied && this.givenUp.length === 0) return;
    const f = u.packets.find((p) => p.type === v1.T.Frame);
    if (f === undefined || f.type !== v1.T.Frame) return;
    if (applied) {
      this.givenUp = this.givenUp.filter((g) => !sameU64(g.sum, f.checksum));
      return;
    }
    if (this.givenUp.length >= GIVEN_UP) this.givenUp.shift();
    this.givenUp.push({ sum: f.checksum, atMs: this.nowMs() });
  }

  /** Handles the waiting units whose base is now held or whose time is up, oldest first. */
  private release(): void {
    for (;;) {
      const before = this.waiting.length;
      this.waiting = this.waiting.filter((w) => w.seq > this.newest);
      this.stale += before - this.waiting.length;
      const now = this.nowMs();
      const pictured = this.hasPicture();
      let ready: Waiting | null = null;
      for (const w of this.waiting) {
        const go = due(w, pictured) <= now || this.holds(w.base) || this.gaveUp(w.base, w.recvMs);
        if (go && (ready === null || w.seq < ready.seq)) ready = w;
      }
      if (ready === null) break;
      this.waiting.splice(this.waiting.indexOf(ready), 1);
      this.run(ready);
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.waiting.length > 0) {
      const pictured = this.hasPicture();
      const next = Math.min(...this.waiting.map((w) => due(w, pictured)));
      this.timer = setTimeout(() => this.release(), Math.max(0, next - this.nowMs()));
    }
  }
}

// Named bases in the page (capability 64): the frame vector with a base (from the independent
// Python encoder), bad flags refused, and the order in which the viewer takes frames that
// arrive on streams of their own: held until their base, dropped when overtaken, released
// when their time is up.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as fw from "../../dist-test/common.mjs";

const vec = (name) => new Uint8Array(readFileSync(new URL(`../../../spec/vectors/${name}.bin`, import.meta.url)));

test("a frame with a named base decodes to the vector's values", () => {
  const d = new fw.Decoder();
  d.push(vec("v1_frame_based"));
  const f = d.next();
  assert.deepEqual([f.seq, f.flags, fw.hexU64(f.checksum), f.rawLen], [45, fw.FrameFlags.RowDelta, "1111222233334444", 16]);
  assert.equal(fw.hexU64(f.base), "0123456789abcdef");
  const plan = fw.parseRowPlan(f.payload, 16, 8, 16);
  assert.deepEqual([plan.dy, plan.ranges], [-1, [[3, 1]]]);
  const plain = new fw.Decoder();
  plain.push(vec("v1_frame_rows"));
  assert.equal(plain.next().base, null);
});

test("a keyframe with a base, and unknown flag bits, are refused", () => {
  const body = (flags) => {
    const b = new Uint8Array(7 + 38 + 8);
    const v = new DataView(b.buffer);
    b.set([0x46, 0x57, 0x10]);
    v.setUint32(3, 46, true);
    b[7 + 16] = flags;
    return b;
  };
  for (const [flags, why] of [[1 | 8, /keyframe with a base/], [16, /bad frame flags/], [2 | 4, /bad frame flags/]]) {
    const d = new fw.Decoder();
    d.push(body(flags));
    assert.throws(() => d.next(), why, `flags ${flags}`);
  }
});

const sum = (n) => ({ lo: n, hi: 0 });
const frame = (seq, base, checksum = 1000 + seq) => [
  { type: fw.T.Frame, seq, base: base === null ? null : sum(base), checksum: sum(checksum) },
];

function harness() {
  let now = 0;
  const held = new Set([100]);
  const handled = [];
  // A unit applies when its base is held (a keyframe, base null, always does).
  const apply = (u) => {
    handled.push(u.seq);
    const f = u.packets.find((p) => p.type === fw.T.Frame);
    return f !== undefined && (f.base === null || held.has(f.base.lo));
  };
  const order = new fw.UnitOrder((s) => held.has(s.lo), apply, () => now);
  return { order, handled, held, at: (t) => (now = t) };
}

test("units: a frame whose base has not arrived waits for it, then both go in seq order", () => {
  const h = harness();
  h.order.push(0, 0, frame(2, 101), 0); // its base is frame 1's picture, still on its way
  assert.deepEqual(h.handled, []);
  h.held.add(101); // frame 1 arrives and is applied
  h.order.push(1, 1000, frame(1, 100), 0);
  assert.deepEqual(h.handled, [1, 2]);
  h.order.reset();
});

test("units: one overtaken by a newer frame is dropped, and counted", () => {
  const h = harness();
  h.order.push(0, 0, frame(5, 100), 0);
  h.order.push(1, 1000, frame(4, 100), 0);
  h.order.push(2, 2000, frame(5, 100), 0);
  assert.deepEqual(h.handled, [5]);
  assert.equal(h.order.stale, 2);
  h.order.reset();
});

test("units: a frame whose base never comes is handled when its time is up (it is then reported missing)", async () => {
  const h = harness();
  h.order.push(0, 0, frame(7, 999), 10); // 2 round trips of 10 ms < 25 ms: waits 25 ms
  assert.deepEqual(h.handled, []);
  h.at(30);
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(h.handled, [7]);
});

test("units: with no picture yet, a frame that overtook the keyframe waits for it past the usual wait", async () => {
  let now = 0;
  let pictured = false;
  const held = new Set();
  const handled = [];
  const apply = (u) => {
    handled.push(u.seq);
    const f = u.packets.find((p) => p.type === fw.T.Frame);
    return f !== undefined && (f.base === null || held.has(f.base.lo));
  };
  const order = new fw.UnitOrder((s) => held.has(s.lo), apply, () => now, () => pictured);
  order.push(0, 0, frame(8, 1007), 0); // made against keyframe 7, still crossing
  now = 30;
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(handled, [], "held past the usual 25 ms");
  order.push(30, 30000, frame(10, 1009), 0); // made against frame 9, which never comes
  // The keyframe applies 10 ms later: frame 8 follows it, and frame 10 is now due at the end
  // of its usual wait (55 ms), by the timer, not a second after it came.
  now = 40;
  held.add(1007);
  pictured = true;
  order.push(40, 40000, frame(7, null), 0);
  assert.deepEqual(handled, [7, 8]);
  now = 60;
  await new Promise((r) => setTimeout(r, 40));
  assert.deepEqual(handled, [7, 8, 10], "reported missing at the end of its usual wait");
  order.reset();
});

test("units: more than four waiting: the oldest goes at once", () => {
  const h = harness();
  for (let s = 10; s < 15; s++) h.order.push(0, 0, frame(s, 500 + s), 0);
  assert.deepEqual(h.handled, [10]);
  h.order.reset();
  // A unit without a frame (a stream description alone) is handled at once.
  h.order.push(0, 0, [{ type: fw.T.StreamDesc }], 0);
  assert.deepEqual(h.handled, [10, -1]);
});

test("units: a frame named against one that did not apply, within a round trip, is handled at once", () => {
  const h = harness();
  h.order.push(0, 0, frame(10, 510, 610), 20); // its base never comes: waits 40 ms
  assert.deepEqual(h.handled, []);
  // At 45 ms frame 10's time is up (it does not apply), and frame 11, named against frame
  // 10's picture and arriving within a round trip, goes with it: no wait of its own.
  h.at(45);
  h.order.push(45, 45000, frame(11, 610, 611), 20);
  assert.deepEqual(h.handled, [10, 11]);
  // A round trip after frame 11 was given up, a frame named against its picture may be
  // named against a repair that made it again: it waits, as does one named against a
  // picture that may still come.
  h.at(65);
  h.order.push(65, 65000, frame(12, 611, 612), 20);
  h.order.push(65, 65000, frame(13, 700, 613), 20);
  assert.deepEqual(h.handled, [10, 11]);
  h.order.reset();
});

test("units: just within the round trip a frame goes at once", () => {
  const h = harness();
  h.order.push(0, 0, frame(10, 510, 610), 20);
  h.at(45); // frame 10's time is up: it does not apply
  h.order.push(45, 45000, frame(11, 999, 611), 20); // waits for a picture that may come
  assert.deepEqual(h.handled, [10]);
  h.at(64.9);
  h.order.push(64.9, 64900, frame(12, 610, 612), 20);
  assert.deepEqual(h.handled, [10, 12]);
  h.order.reset();
});

test("units: with no round trip measured, a frame waiting for a picture given up still waits", () => {
  const h = harness();
  h.order.push(0, 0, frame(10, 510, 610), 0); // waits 25 ms
  h.order.push(10, 10000, frame(12, 610, 612), 0); // named against frame 10's picture
  h.at(30); // frame 10's time is up: it does not apply
  h.order.push(30, 30000, frame(13, 999, 613), 0);
  assert.deepEqual(h.handled, [10]);
  h.order.reset();
});

test("kept pictures: a saved picture comes back exactly, the oldest is reused after ten", async () => {
  await fw.ready();
  const kept = new fw.KeptPictures();
  const p = new fw.Picture(4, 3);
  const pics = [];
  for (let i = 0; i < 12; i++) {
    const px = Uint8Array.from({ length: 12 }, (_, k) => (k * 7 + i) & 255);
    p.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, 12, px);
    kept.keep(p, p.checksum());
    pics.push({ px, sum: p.checksum() });
  }
  assert.equal(kept.holds(pics[0].sum), false, "the oldest two were dropped");
  assert.equal(kept.holds(pics[1].sum), false);
  assert.equal(kept.restore(p, pics[0].sum), false);
  assert.ok(kept.restore(p, pics[4].sum));
  assert.deepEqual([...p.rows()], [...pics[4].px]);
  assert.ok(fw.sameU64(p.checksum(), pics[4].sum));
});

/** Kept pictures and a picture; `show(i)` applies picture i as a keyframe and keeps it. */
function keeping() {
  const kept = new fw.KeptPictures();
  const p = new fw.Picture(4, 3);
  const show = (i) => {
    const px = Uint8Array.from({ length: 12 }, (_, k) => (k * 5 + i * 3) & 255);
    p.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, 12, px);
    kept.keep(p, p.checksum());
    return p.checksum();
  };
  return { kept, p, show };
}

test("kept pictures: a picture that comes back is kept as the newest", async () => {
  await fw.ready();
  const { kept, show } = keeping();
  // X, nine others (ten kept, X the oldest), X again, then one more.
  const x = show(0);
  const first = show(1);
  for (let i = 2; i <= 9; i++) show(i);
  assert.equal(show(0).toString(), x.toString());
  show(10);
  assert.ok(kept.holds(x), "the picture that came back was pushed out");
  assert.equal(kept.holds(first), false);
});

test("kept pictures: a base restored again outlasts the pictures applied after it", async () => {
  await fw.ready();
  const { kept, p, show } = keeping();
  // X, then eight pictures after it.
  const x = show(0);
  const first = show(1);
  for (let i = 2; i <= 8; i++) show(i);
  // Twelve frames made against X (stall probes), each restoring it first.
  for (let i = 20; i < 32; i++) {
    assert.ok(kept.restore(p, x), `X was pushed out before picture ${i}`);
    show(i);
  }
  assert.ok(kept.holds(x));
  assert.equal(kept.holds(first), false);
});

test("restoring a kept picture marks only the ring slots whose rows differ", async () => {
  await fw.ready();
  const [w, h] = [8, 6];
  const p = new fw.Picture(w, h);
  const a = Uint8Array.from({ length: w * h }, (_, k) => (k * 13 + 5) & 255);
  p.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, a.length, a);
  const kept = new fw.KeptPictures();
  kept.keep(p, p.checksum());
  const sumA = p.checksum();
  // Scroll by one row: row y takes old row y + 1; the last row gets new content.
  const head = new Uint8Array(16);
  const v = new DataView(head.buffer);
  v.setInt32(0, 1, true);
  v.setUint32(4, 1, true);
  v.setUint32(8, h - 1, true);
  v.setUint32(12, 1, true);
  const payload = new Uint8Array(16 + w);
  payload.set(head);
  payload.fill(0x5a, 16);
  p.apply(fw.FrameFlags.RowDelta, fw.Codec.Raw, w, payload);
  assert.ok(!fw.sameU64(p.checksum(), sumA));
  // Drawn: nothing pending.
  p.dirty.fill(0);
  p.allDirty = false;
  assert.ok(kept.restore(p, sumA));
  assert.deepEqual([...p.rows()], [...a], "the kept picture comes back exactly");
  assert.equal(p.allDirty, false);
  assert.equal(p.dirty.reduce((n, d) => n + d, 0), 1, "one slot holds a different row");
  // A picture that was not valid is redrawn whole.
  p.valid = false;
  assert.ok(kept.restore(p, sumA));
  assert.equal(p.allDirty, true);
});

test("units: a keyframe slower than the deltas made against it still applies after they were reported missing", async () => {
  const h = harness();
  h.order.push(0, 0, frame(8, 555), 0); // made against keyframe 7, still crossing
  h.at(30);
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(h.handled, [8], "its time is up: reported missing");
  h.order.push(30, 30000, frame(7, null), 0); // the keyframe comes after all
  assert.deepEqual(h.handled, [8, 7]);
  h.order.push(31, 31000, frame(6, null), 0); // older than the keyframe applied: overtaken
  assert.deepEqual(h.handled, [8, 7]);
  assert.equal(h.order.stale, 1);
  h.order.reset();
});

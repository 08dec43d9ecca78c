// The TypeScript v1 codec against the shared vectors in spec/vectors (written by an
// independent Python encoder): every file decodes to the README's values, and what the page
// sends encodes to exactly the file's bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as fw from "../../dist-test/common.mjs";

const vec = (name) => new Uint8Array(readFileSync(new URL(`../../../spec/vectors/${name}.bin`, import.meta.url)));
const one = (name) => {
  const d = new fw.Decoder();
  d.push(vec(name));
  const p = d.next();
  assert.equal(d.next(), null, "one packet per file");
  return p;
};

test("host-to-viewer packets decode to the documented values", () => {
  assert.deepEqual(one("v1_welcome"), { type: fw.T.Welcome, version: 1, caps: 15, session: 0x0102030405060708 });
  const sd = one("v1_stream_desc");
  assert.deepEqual([sd.width, sd.height, sd.format, sd.codec, sd.name], [1600, 1200, 1, 1, "screen"]);
  const f = one("v1_frame");
  assert.deepEqual([f.seq, f.captureUs, f.flags, f.codec, fw.hexU64(f.checksum), f.rawLen], [42, 123456789, 1, 1, "deadbeefcafef00d", 16]);
  const out = new Uint8Array(16);
  fw.decodeBlock(f.payload, out);
  assert.deepEqual([...out], [...Array(16).keys()]);
  const r = one("v1_frame_rows");
  assert.deepEqual([r.seq, r.flags, fw.hexU64(r.checksum)], [44, 2, "0123456789abcdef"]);
  const plan = fw.parseRowPlan(r.payload, 16, 8, 16);
  assert.deepEqual([plan.dy, plan.ranges], [-1, [[3, 1]]]);
  const u = one("v1_unchanged");
  assert.deepEqual([u.seq, u.captureUs, fw.hexU64(u.checksum)], [43, 123473456, "deadbeefcafef00d"]);
  assert.deepEqual(one("v1_ping"), { type: fw.T.Ping, id: 7, sentUs: 5000000 });
  assert.deepEqual(one("v1_pong"), { type: fw.T.Pong, id: 7, pingSentUs: 5000000, replyUs: 9000000 });
  assert.deepEqual(one("v1_command"), { type: fw.T.Command, code: 4, a: 1024, b: 768 });
  assert.deepEqual(one("v1_goodbye"), { type: fw.T.Goodbye, code: 2, reason: "wrong or missing token" });
  assert.deepEqual(one("v1_missed"), { type: fw.T.Missed, samples: 900 });
  const s = one("v1_sample");
  assert.deepEqual([s.stream, s.device, s.deviceSeq, s.acceptedUs, s.readings], ["sensor/room_1", "SIM409534", 17, 987654321, [["ADC1", -592], ["T", 21.5]]]);
  const t = one("v1_thermal");
  assert.deepEqual([t.stream, t.device, t.deviceSeq, t.width, t.height, [...t.values]], ["thermal/room_1", "cam7", 3, 3, 2, [0x0102, 0x0304, 0x0506, 0xffff, 0, 300]]);
});

test("viewer-to-host packets encode to the vectors' bytes", () => {
  assert.deepEqual(fw.hello(1, 15, "screen", "s3cret"), vec("v1_hello"));
  assert.deepEqual(fw.hello(4, 0, "sensor/", ""), vec("v1_hello_subscriber"));
  assert.deepEqual(fw.ack(42, 0, 1000, 1200, 1300), vec("v1_ack"));
  assert.deepEqual(fw.keyframeRequest(2), vec("v1_keyframe_request"));
  assert.deepEqual(fw.ping(7, 5000000), vec("v1_ping"));
  assert.deepEqual(fw.pong(7, 5000000, 9000000), vec("v1_pong"));
  assert.deepEqual(fw.goodbye(2, "wrong or missing token"), vec("v1_goodbye"));
  assert.deepEqual(fw.input(fw.InputKind.PointerDown, 800, 600, 1), vec("v1_input"));
});

test("packets split at every byte boundary decode the same", () => {
  const all = ["v1_welcome", "v1_stream_desc", "v1_frame", "v1_sample", "v1_thermal", "v1_goodbye"].map(vec);
  const stream = new Uint8Array(all.reduce((n, b) => n + b.length, 0));
  let o = 0;
  for (const b of all) stream.set(b, (o += b.length) - b.length);
  for (let cut = 1; cut < stream.length; cut += 7) {
    const d = new fw.Decoder();
    const got = [];
    for (let i = 0; i < stream.length; i += cut) {
      d.push(stream.subarray(i, i + cut));
      for (let p = d.next(); p !== null; p = d.next()) got.push(p.type);
    }
    assert.deepEqual(got, [fw.T.Welcome, fw.T.StreamDesc, fw.T.Frame, fw.T.Sample, fw.T.Thermal, fw.T.Goodbye]);
  }
});

test("bad framing is refused before buffering", () => {
  const d = new fw.Decoder();
  d.push(Uint8Array.of(0x46, 0x57, 0x30, 0xff, 0xff, 0, 0));
  assert.throws(() => d.next(), /over its bound/);
  const m = new fw.Decoder();
  m.push(Uint8Array.of(0x47));
  assert.throws(() => m.next(), /bad magic/);
  const u = new fw.Decoder();
  u.push(Uint8Array.of(0x46, 0x57, 0x99, 0, 0, 0, 0));
  assert.throws(() => u.next(), /unknown packet type/);
  const f = new fw.Decoder();
  f.push(Uint8Array.of(0x46, 0x57, 0x30, 3, 0, 0, 0, 1, 2, 3));
  assert.throws(() => f.next(), /expected 12/);
});

test("moved-rectangle vectors: each frame turns the picture before into the picture after", async () => {
  await fw.ready();
  const dir = new URL("../../../spec/vectors/moves/", import.meta.url);
  const cases = JSON.parse(readFileSync(new URL("cases.json", dir), "utf8"));
  assert.equal(cases.length, 9);
  assert.deepEqual(cases.filter((c) => c.name.startsWith("predicted-")).map((c) => c.name),
    ["predicted-grey", "predicted-colour", "predicted-no-moves", "predicted-colour-whole"]);
  // Grey rectangles in mode 0; colour: a mode-0 rectangle filling the cache a mode-1 one uses.
  const modes = { "predicted-grey": [0, 0], "predicted-colour": [0, 1, 1], "predicted-no-moves": [0], "predicted-colour-whole": [1] };
  const hex = (s) => Uint8Array.from(s.match(/../g).map((b) => parseInt(b, 16)));
  for (const c of cases) {
    const d = new fw.Decoder();
    d.push(new Uint8Array(readFileSync(new URL(`${c.name}.bin`, dir))));
    const f = d.next();
    assert.equal(f.flags, fw.FrameFlags.RectDelta, c.name);
    assert.equal(fw.hexU64(f.checksum), c.checksum, c.name);
    const pic = new fw.Picture(c.width, c.height);
    const before = hex(c.before);
    pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, before.length, before);
    const plan = fw.parseRectPlan(f.payload, c.width, c.height, f.rawLen);
    assert.equal(plan.predicted.length > 0, c.name.startsWith("predicted-"), `${c.name}: predicted rectangles`);
    assert.deepEqual(plan.predicted.map((r) => r.mode), modes[c.name] ?? [], `${c.name}: modes`);
    pic.apply(f.flags, f.codec, f.rawLen, f.payload);
    const rows = [];
    for (let y = 0; y < c.height; y++) {
      const s = (pic.top + y) % c.height;
      rows.push(...pic.data.subarray(s * c.width, (s + 1) * c.width));
    }
    assert.deepEqual(Buffer.from(rows).toString("hex"), c.after, `${c.name}: the picture after`);
    assert.equal(fw.hexU64(pic.checksum()), c.checksum, `${c.name}: checksum`);
  }
});

test("moved-rectangle headers out of bounds are DecodeErrors", () => {
  const h = (...v) => new Uint8Array(new Uint16Array(v).buffer);
  const bad = [
    h(1, 0), // truncated
    h(65, 0), // too many moves
    h(0, 11), // more patches than rows
    h(1, 0, 0, 0, 5, 5, 6, 0), // a move from outside
    h(0, 1, 0, 0, 0, 1), // an empty patch
    h(0, 1, 9, 0, 2, 1), // a patch outside
  ];
  for (const p of bad) assert.throws(() => fw.parseRectPlan(p, 10, 10, 0), fw.DecodeError);
  assert.deepEqual(fw.parseRectPlan(h(1, 0, 0, 0, 5, 5, 5, 0), 10, 10, 0).moves, [{ to: { x: 0, y: 0, w: 5, h: 5 }, dx: 5, dy: 0 }]);
});

test("predicted-rectangle headers out of bounds are DecodeErrors, checked before anything is applied", () => {
  // nmoves = bit 15, no moves, no patches, then npred:u16, planes:u8, rects [x, y, w, h, mode].
  const p = (npred, planes, ...rects) => {
    const b = new Uint8Array(4 + 3 + rects.length * 9);
    const v = new DataView(b.buffer);
    v.setUint16(0, 0x8000, true);
    v.setUint16(4, npred, true);
    v.setUint8(6, planes);
    rects.forEach(([x, y, w, h, mode = 0], i) => {
      [x, y, w, h].forEach((n, k) => v.setUint16(7 + i * 9 + k * 2, n, true));
      v.setUint8(7 + i * 9 + 8, mode);
    });
    return b;
  };
  const ok = p(1, 3, [0, 0, 4, 2, 1]); // in a 10 x 12 colour picture: planes of 4 rows
  assert.equal(ok.length, 4 + 3 + 9);
  assert.deepEqual(fw.parseRectPlan(ok, 10, 12, 3 * 8).predicted, [{ x: 0, y: 0, w: 4, h: 2, mode: 1 }]);
  assert.equal(fw.parseRectPlan(ok, 10, 12, 24).planes, 3);
  assert.equal(fw.parseRectPlan(ok, 10, 12, 24).headerLen, ok.length);
  assert.deepEqual(fw.parseRectPlan(p(2, 3, [0, 0, 4, 2, 0], [4, 1, 2, 3, 1]), 10, 12, 3 * 14).predicted.map((r) => r.mode), [0, 1]);
  assert.equal(fw.parseRectPlan(p(1, 1, [0, 0, 4, 2]), 10, 12, 8).planes, 1);
  assert.equal(fw.parseRectPlan(p(1, 1, [0, 10, 10, 2]), 10, 12, 20).predicted.length, 1); // grey: the whole height is plane 0
  assert.equal(fw.parseRectPlan(p(0, 3), 10, 12, 0).predicted.length, 0);
  const bad = [
    [p(1, 2, [0, 0, 4, 2]), 16], // 2 planes
    [p(1, 0, [0, 0, 4, 2]), 0], // 0 planes
    [p(1, 3, [0, 0, 4, 2]), 24, 10], // 3 planes do not divide 10 rows
    [p(1, 3, [0, 3, 4, 2]), 24], // below plane 0 (rows 3..4 of 4)
    [p(1, 3, [7, 0, 4, 2]), 24], // right of the picture
    [p(1, 3, [0, 0, 0, 2]), 0], // empty
    [p(5, 3, ...Array(5).fill([0, 0, 1, 1])), 15], // npred 5 > 12 / 3
    [p(2, 3, [0, 0, 10, 4], [0, 0, 1, 1]), 3 * 41], // areas over a plane
    [p(1, 3, [0, 0, 4, 2, 2]), 24], // mode 2
    [p(1, 3, [0, 0, 4, 2, 255]), 24], // mode 255
    [p(1, 1, [0, 0, 4, 2, 1]), 8], // mode 1 in grey
    [p(2, 3, [0, 0, 4, 2, 0], [4, 0, 2, 2, 3]), 3 * 12], // a bad mode in the second rectangle
    [ok, 8], // raw_len without the other planes
    [ok, 3 * 8 + 1], // raw_len one too many
    [ok.subarray(0, ok.length - 1), 24], // truncated rectangle (its mode)
    [ok.subarray(0, ok.length - 2), 24], // truncated rectangle
    [ok.subarray(0, 6), 24], // truncated npred/planes
  ];
  for (const [payload, rawLen, height = 12] of bad)
    assert.throws(() => fw.parseRectPlan(payload, 10, height, rawLen), fw.DecodeError, `${[...payload]} raw_len ${rawLen}`);

  // A bad header leaves the picture as it was (and invalid until a keyframe).
  const pic = new fw.Picture(10, 12);
  const before = Uint8Array.from({ length: 120 }, (_, i) => i);
  pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, 120, before);
  const bits = (b) => Buffer.from(b).toString("hex");
  const frame = new Uint8Array(ok.length + 24);
  frame.set(ok);
  frame.fill(7, ok.length);
  assert.throws(() => pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, 25, frame), fw.DecodeError);
  assert.equal(bits(pic.rows()), bits(before));
  assert.equal(pic.valid, false);
  // A bad mode after a good rectangle, raw_len right: still nothing applied.
  pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, 120, before);
  const badMode = p(2, 3, [0, 0, 4, 2, 1], [4, 0, 2, 2, 2]);
  const frame2 = new Uint8Array(badMode.length + 3 * 12);
  frame2.set(badMode);
  frame2.fill(7, badMode.length);
  assert.throws(() => pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, 3 * 12, frame2), fw.DecodeError);
  assert.equal(bits(pic.rows()), bits(before));
  assert.equal(pic.valid, false);
  for (const mode of [0, 1]) {
    // The same frame with a good mode applies.
    pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, 120, before);
    frame2[7 + 9 + 8] = mode;
    pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, 3 * 12, frame2);
    assert.equal(pic.valid, true);
  }
});

/**
 * Predicted rectangles (each with its mode) applied to a stacked picture (row order), written
 * from spec/PROTOCOL.md: mode 1 predicts planes 1 and 2 from T1/T2 where set, mode 0 from s;
 * every colour pixel updates T1 and T2 whatever the mode.
 */
function decodeNaive(before, w, ph, planes, rects, res) {
  const pic = Uint8Array.from(before);
  const area = rects.reduce((n, r) => n + r.w * r.h, 0);
  const t1 = new Map();
  const t2 = new Map();
  let start = 0;
  for (const r of rects) {
    const at = (k, i, j) => (k * ph + r.y + i) * w + r.x + j;
    for (let i = 0; i < r.h; i++)
      for (let j = 0; j < r.w; j++) {
        const vals = [];
        for (let k = 0; k < planes; k++) {
          let sp;
          if (i === 0 && j === 0) sp = 0;
          else if (i === 0) sp = pic[at(k, i, j - 1)];
          else if (j === 0) sp = pic[at(k, i - 1, j)];
          else {
            const [a, b, c] = [pic[at(k, i, j - 1)], pic[at(k, i - 1, j)], pic[at(k, i - 1, j - 1)]];
            sp = c >= Math.max(a, b) ? Math.min(a, b) : c <= Math.min(a, b) ? Math.max(a, b) : a + b - c;
          }
          const tab = k === 1 ? t1 : t2;
          const key = k === 1 ? vals[0] : 256 * vals[0] + vals[1];
          const pred = k > 0 && r.mode === 1 && tab.has(key) ? tab.get(key) : sp;
          const val = (pred + res[k * area + start + i * r.w + j]) % 256;
          if (k > 0) tab.set(key, val);
          pic[at(k, i, j)] = val;
          vals.push(val);
        }
      }
    start += r.w * r.h;
  }
  return pic;
}

/** The whole picture up one row, as a moved-rectangle delta of one move. */
function shiftUp(pic) {
  const sc = new Uint8Array(16);
  const sv = new DataView(sc.buffer);
  sv.setUint16(0, 1, true);
  sv.setUint16(8, pic.width, true);
  sv.setUint16(10, pic.height - 1, true);
  sv.setInt16(14, 1, true);
  pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, 0, sc);
}

test("predicted rectangles on random headers match a naive decoder, through a scrolled ring", async () => {
  await fw.ready();
  let s = 12345;
  const rnd = (n) => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0), (s >>> 8) % n);
  for (let round = 0; round < 60; round++) {
    const planes = round % 2 ? 3 : 1;
    const w = 1 + rnd(12);
    const ph = 1 + rnd(8);
    const h = ph * planes;
    // Few grey levels half the time, so the colour cache hits.
    const before = Uint8Array.from({ length: w * h }, () => (round % 4 < 2 ? rnd(3) * 60 : rnd(256)));
    const rects = [];
    let area = 0;
    for (let i = 0, n = 1 + rnd(Math.min(3, ph)); i < n; i++) {
      const rw = 1 + rnd(w);
      const rh = 1 + rnd(ph);
      if (area + rw * rh > w * ph) break;
      area += rw * rh;
      rects.push({ x: rnd(w - rw + 1), y: rnd(ph - rh + 1), w: rw, h: rh, mode: planes === 3 ? rnd(2) : 0 });
    }
    const res = Uint8Array.from({ length: planes * area }, () => (rnd(3) === 0 ? rnd(256) : 0));
    const payload = new Uint8Array(7 + rects.length * 9 + res.length);
    const v = new DataView(payload.buffer);
    v.setUint16(0, 0x8000, true);
    v.setUint16(4, rects.length, true);
    v.setUint8(6, planes);
    rects.forEach((r, i) => {
      [r.x, r.y, r.w, r.h].forEach((x, k) => v.setUint16(7 + i * 9 + k * 2, x, true));
      v.setUint8(7 + i * 9 + 8, r.mode);
    });
    payload.set(res, 7 + rects.length * 9);

    const pic = new fw.Picture(w, h);
    pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, before.length, before);
    if (h > 1) {
      // The ring's top moves, so rows are addressed through it.
      shiftUp(pic);
      assert.equal(pic.top, 1);
    }
    const expect = decodeNaive(pic.rows(), w, ph, planes, rects, res);
    pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, res.length, payload);
    const hex = (b) => Buffer.from(b).toString("hex");
    assert.equal(hex(pic.rows()), hex(expect), `round ${round}`);
    const fresh = new fw.Picture(w, h);
    fresh.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, expect.length, expect);
    assert.equal(fw.hexU64(pic.checksum()), fw.hexU64(fresh.checksum()), `round ${round}: checksum`);
  }
});

test("moves over rows that repeat: the picture, its checksum and the slots to redraw are right", async () => {
  await fw.ready();
  let s = 777;
  const rnd = (n) => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0), (s >>> 8) % n);
  // Three row patterns, one flat: rows equal whole are common, as in colour planes of grey.
  const pattern = (k, x) => (k === 0 ? 0 : k === 1 ? (x * 37) % 251 : (((x / 3) | 0) * 11 + 5) & 255);
  const hex = (b) => Buffer.from(b).toString("hex");
  for (let round = 0; round < 300; round++) {
    const w = 8 + rnd(24);
    const h = 2 + rnd(20);
    const key = new Uint8Array(w * h);
    for (let y = 0; y < h; y++) {
      const k = rnd(3);
      for (let x = 0; x < w; x++) key[y * w + x] = pattern(k, x);
    }
    const pic = new fw.Picture(w, h);
    pic.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, key.length, key);
    // The ring's top moves, so rows and slots differ from here.
    shiftUp(pic);
    assert.equal(pic.top, 1);
    const before = Uint8Array.from(pic.rows());
    const moves = [];
    for (let i = 0, n = 1 + rnd(4); i < n; i++) {
      const whole = rnd(3) === 0;
      const mw = whole ? w : 1 + rnd(w);
      const mh = 1 + rnd(h);
      const x = whole ? 0 : rnd(w - mw + 1);
      const y = rnd(h - mh + 1);
      const sx = whole ? 0 : rnd(w - mw + 1);
      const sy = rnd(h - mh + 1);
      moves.push({ x, y, w: mw, h: mh, dx: rnd(2) ? sx - x : 0, dy: sy - y });
    }
    // Now and then a patch over what the moves left.
    const patches = [];
    for (let i = 0, n = rnd(3); i < n; i++) {
      const pw = 1 + rnd(w);
      const ph = 1 + rnd(h);
      // Patches hold a picture's worth of pixels at most.
      if (patches.reduce((a, p) => a + p.w * p.h, pw * ph) > w * h) break;
      patches.push({ x: rnd(w - pw + 1), y: rnd(h - ph + 1), w: pw, h: ph });
    }
    const area = patches.reduce((a, p) => a + p.w * p.h, 0);
    const xor = Uint8Array.from({ length: area }, () => (rnd(2) ? rnd(256) : 0));
    const head = 4 + moves.length * 12 + patches.length * 8;
    const payload = new Uint8Array(head + area);
    const v = new DataView(payload.buffer);
    v.setUint16(0, moves.length, true);
    v.setUint16(2, patches.length, true);
    moves.forEach((m, i) => {
      [m.x, m.y, m.w, m.h].forEach((a, k) => v.setUint16(4 + i * 12 + k * 2, a, true));
      v.setInt16(4 + i * 12 + 8, m.dx, true);
      v.setInt16(4 + i * 12 + 10, m.dy, true);
    });
    patches.forEach((p, i) => {
      [p.x, p.y, p.w, p.h].forEach((a, k) => v.setUint16(4 + moves.length * 12 + i * 8 + k * 2, a, true));
    });
    payload.set(xor, head);
    // By the definition: every move reads the picture before the frame, in order.
    const expect = before.slice();
    for (const m of moves) {
      for (let y = m.y; y < m.y + m.h; y++) {
        const from = (y + m.dy) * w + m.x + m.dx;
        expect.set(before.subarray(from, from + m.w), y * w + m.x);
      }
    }
    let off = 0;
    for (const p of patches) {
      for (let y = p.y; y < p.y + p.h; y++) {
        for (let x = p.x; x < p.x + p.w; x++) expect[y * w + x] ^= xor[off++];
      }
    }
    const slotsBefore = pic.data.slice();
    pic.dirty.fill(0);
    pic.apply(fw.FrameFlags.RectDelta, fw.Codec.Raw, area, payload);
    assert.equal(hex(pic.rows()), hex(expect), `round ${round}`);
    const fresh = new fw.Picture(w, h);
    fresh.apply(fw.FrameFlags.Keyframe, fw.Codec.Raw, expect.length, expect);
    assert.equal(fw.hexU64(pic.checksum()), fw.hexU64(fresh.checksum()), `round ${round}: checksum`);
    for (let slot = 0; slot < h; slot++) {
      const changed = hex(pic.data.subarray(slot * w, (slot + 1) * w)) !== hex(slotsBefore.subarray(slot * w, (slot + 1) * w));
      if (changed) assert.equal(pic.dirty[slot], 1, `round ${round}: slot ${slot} changed but is not redrawn`);
    }
  }
});

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
  assert.equal(cases.length, 5);
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

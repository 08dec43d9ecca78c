// LZ4 decoding, checksums and the ring picture, against independent implementations: Python's
// lz4 and xxhash packages (the C libraries) in the repository's .venv, and naive definitions
// written in this file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fw from "../../dist-test/common.mjs";

const python = new URL("../../../.venv/bin/python", import.meta.url).pathname;
const py = (code, input) => execFileSync(existsSync(python) ? python : "python3", ["-c", code], { input, maxBuffer: 1 << 26 });

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => ((s ^= s << 13), (s ^= s >>> 17), (s ^= s << 5), (s >>> 0) / 2 ** 32);
}

function samples() {
  const r = rng(7);
  const out = [new Uint8Array(0), new Uint8Array(1), new Uint8Array(2_000_000)];
  const rand = new Uint8Array(70_000).map(() => (r() * 256) | 0);
  out.push(rand);
  const text = new Uint8Array(100_000).map((_, i) => "framewire streams frames "[i % 25].charCodeAt(0));
  out.push(text);
  const mixed = new Uint8Array(500_000);
  for (let i = 0; i < mixed.length; i++) mixed[i] = r() < 0.02 ? (r() * 256) | 0 : i % 1600 < 40 ? 255 : 0;
  out.push(mixed);
  for (let p = 1; p <= 9; p++) out.push(new Uint8Array(4000).map((_, i) => (i % p) * 31));
  return out;
}

test("LZ4 blocks made by liblz4 decode to their input", () => {
  for (const raw of samples()) {
    const block = new Uint8Array(py("import sys,lz4.block as b; sys.stdout.buffer.write(b.compress(sys.stdin.buffer.read(), store_size=False))", raw));
    const out = new Uint8Array(raw.length);
    fw.decodeBlock(block, out);
    assert.ok(Buffer.from(out).equals(Buffer.from(raw)), `round trip of ${raw.length} bytes`);
    if (raw.length > 0) assert.throws(() => fw.decodeBlock(block, new Uint8Array(raw.length + 1)), fw.Lz4Error);
  }
});

/** `n` inputs for a decoder: random bytes, and `base` cut short with one byte changed, in turn. */
function* garbled(seed, base, n) {
  const r = rng(seed);
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      yield new Uint8Array((r() * 64) | 0).map(() => (r() * 256) | 0);
      continue;
    }
    const b = base.slice(0, 1 + ((r() * base.length) | 0));
    b[(r() * b.length) | 0] = (r() * 256) | 0;
    yield b;
  }
}

test("LZ4: random and mutated blocks only ever raise Lz4Error", () => {
  const base = new Uint8Array(py("import sys,lz4.block as b; sys.stdout.buffer.write(b.compress(bytes(range(256))*40, store_size=False))", Buffer.alloc(0)));
  for (const b of garbled(99, base, 3000)) {
    try {
      fw.decodeBlock(b, new Uint8Array(10240));
    } catch (e) {
      assert.ok(e instanceof fw.Lz4Error, String(e));
    }
  }
});

// zstd frames as the host makes them (one frame, its content size in the header), by libzstd.
const zstdOf = (raw, level = 1) =>
  new Uint8Array(py("import sys,zstandard as z; sys.stdout.buffer.write(z.ZstdCompressor(level=" + level + ", write_content_size=True).compress(sys.stdin.buffer.read()))", raw));

test("zstd frames made by libzstd decode to their input, and only into exactly their size", () => {
  for (const raw of samples()) {
    if (raw.length === 0) continue;
    for (const level of [1, 19]) {
      const frame = zstdOf(raw, level);
      assert.equal(fw.zstdContentSize(frame), raw.length);
      const out = new Uint8Array(raw.length);
      fw.decodeZstd(frame, out);
      assert.ok(Buffer.from(out).equals(Buffer.from(raw)), `round trip of ${raw.length} bytes at level ${level}`);
      assert.throws(() => fw.decodeZstd(frame, new Uint8Array(raw.length + 1)), fw.ZstdError);
      assert.throws(() => fw.decodeZstd(frame, new Uint8Array(raw.length - 1)), fw.ZstdError);
    }
  }
});

test("zstd: a header naming a huge size is refused before anything is allocated", () => {
  // Magic, then a header with an 8-byte content size of 2^40 (no window descriptor).
  const b = new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]);
  assert.throws(() => fw.zstdContentSize(b), fw.ZstdError);
  // 3 GB, stated in 4 bytes: read, and refused as the wrong size for the picture.
  const c = new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 0xc0, 1, 0, 0]);
  assert.equal(fw.zstdContentSize(c), 0xc0000000);
  assert.throws(() => fw.decodeZstd(c, new Uint8Array(100)), fw.ZstdError);
});

test("zstd: random and mutated frames only ever raise ZstdError", () => {
  const raw = new Uint8Array(20_000).map((_, i) => (i % 1600 < 40 ? 255 : (i * 7) & 0xff));
  for (const b of garbled(1234, zstdOf(raw), 2000)) {
    const out = new Uint8Array(raw.length);
    try {
      fw.decodeZstd(b, out);
    } catch (e) {
      assert.ok(e instanceof fw.ZstdError, String(e));
    }
  }
});

test("picture checksum equals xxh3 over the rows' little-endian xxh3 (Python xxhash)", async () => {
  await fw.ready();
  const r = rng(3);
  for (const [w, h] of [[1, 1], [16, 8], [1600, 12], [333, 77]]) {
    const pic = new Uint8Array(w * h).map(() => (r() * 256) | 0);
    const want = py(
      `import sys,struct,xxhash; d=sys.stdin.buffer.read(); w=${w}
rows=b"".join(struct.pack("<Q", xxhash.xxh3_64_intdigest(d[i:i+w])) for i in range(0,len(d),w))
print("%016x" % xxhash.xxh3_64_intdigest(rows))`,
      pic,
    ).toString().trim();
    assert.equal(fw.hexU64(fw.pictureChecksum(pic, w)), want, `${w}x${h}`);
  }
});

/** A row delta with a raw payload, built by hand from the spec. */
function rowDelta(dy, ranges, xorRows) {
  const head = new DataView(new ArrayBuffer(8 + ranges.length * 8));
  head.setInt32(0, dy, true);
  head.setUint32(4, ranges.length, true);
  ranges.forEach(([y0, n], i) => {
    head.setUint32(8 + i * 8, y0, true);
    head.setUint32(12 + i * 8, n, true);
  });
  const out = new Uint8Array(head.byteLength + xorRows.length);
  out.set(new Uint8Array(head.buffer));
  out.set(xorRows, head.byteLength);
  return out;
}

test("the ring picture applies keyframes, deltas and row deltas as the spec defines", async () => {
  await fw.ready();
  const r = rng(11);
  const w = 24;
  const h = 40;
  let truth = new Uint8Array(w * h).map(() => (r() * 256) | 0);
  const pic = new fw.Picture(w, h);
  pic.apply(1, 0, w * h, truth.slice());
  for (let step = 0; step < 300; step++) {
    const next = new Uint8Array(w * h);
    let payload;
    let flags;
    let rawLen;
    if (step % 5 === 4) {
      // Full delta: next = truth with random bytes changed.
      next.set(truth);
      for (let k = 0; k < 30; k++) next[(r() * next.length) | 0] = (r() * 256) | 0;
      payload = next.map((v, i) => v ^ truth[i]);
      flags = 0;
      rawLen = w * h;
    } else {
      const dy = Math.round((r() - 0.5) * 2 * (h - 1) * (r() < 0.7 ? 0.3 : 1));
      // Naive shift: row y becomes old row y + dy where it exists, else keeps its content.
      for (let y = 0; y < h; y++) {
        const from = y + dy >= 0 && y + dy < h ? y + dy : y;
        next.set(truth.subarray(from * w, (from + 1) * w), y * w);
      }
      const ranges = [];
      for (let y = 0; y < h; ) {
        if (r() < 0.2) {
          const n = Math.min(h - y, 1 + ((r() * 4) | 0));
          ranges.push([y, n]);
          y += n + 1;
        } else y++;
      }
      const xs = [];
      const shifted = next.slice();
      for (const [y0, n] of ranges)
        for (let y = y0; y < y0 + n; y++) {
          const row = new Uint8Array(w).map(() => (r() * 256) | 0);
          next.set(row, y * w);
          xs.push(row.map((v, i) => v ^ shifted[y * w + i]));
        }
      const xor = new Uint8Array(xs.length * w);
      xs.forEach((x, i) => xor.set(x, i * w));
      payload = rowDelta(dy, ranges, xor);
      flags = 2;
      rawLen = xor.length;
    }
    pic.apply(flags, 0, rawLen, payload);
    truth = next;
    assert.ok(Buffer.from(pic.rows()).equals(Buffer.from(truth)), `pixels after step ${step}`);
    assert.equal(fw.hexU64(pic.checksum()), fw.hexU64(fw.pictureChecksum(truth, w)), `checksum after step ${step}`);
  }
});

test("row plans out of bounds are decode errors", () => {
  assert.throws(() => fw.parseRowPlan(rowDelta(8, [], new Uint8Array(0)), 4, 8, 0), /shift/);
  assert.throws(() => fw.parseRowPlan(rowDelta(0, [[2, 1], [1, 1]], new Uint8Array(8)), 4, 8, 8), /ascending/);
  assert.throws(() => fw.parseRowPlan(rowDelta(0, [[7, 2]], new Uint8Array(8)), 4, 8, 8), /inside/);
  assert.throws(() => fw.parseRowPlan(rowDelta(0, [[1, 1]], new Uint8Array(4)), 4, 8, 8), /raw_len/);
});

test("colour scale: ends and stops as documented, monotonic brightness", () => {
  assert.deepEqual(fw.colour(0), [0, 0, 4]);
  assert.deepEqual(fw.colour(1), [252, 255, 164]);
  assert.deepEqual(fw.colour(0.5), [188, 55, 84]);
  assert.deepEqual(fw.colour(0.125), [44, 8, 57]);
  let last = -1;
  for (let t = 0; t <= 1; t += 0.01) {
    const [r, g, b] = fw.colour(t);
    const y = 0.299 * r + 0.587 * g + 0.114 * b;
    assert.ok(y >= last - 0.5, `brightness falls at ${t}`);
    last = y;
  }
});

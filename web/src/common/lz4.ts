// LZ4 block decoder (block format only: no frame header, no size prefix), written by hand:
// the page needs nothing else from an LZ4 library, and a 100-line decoder with bounds checks on
// every read and write is smaller and faster than a WASM module round trip for these payloads.
// anchors.md notes the npm LZ4 packages measured here are either frame-only or slower.

export class Lz4Error extends Error {}

/**
 * Decodes `src` into `dst`, which must be exactly the decoded size. Returns nothing; throws
 * Lz4Error when the block is malformed or decodes to any other size.
 */
export function decodeBlock(src: Uint8Array, dst: Uint8Array): void {
  const sn = src.length;
  const dn = dst.length;
  let i = 0;
  let o = 0;
  for (;;) {
    if (i >= sn) throw new Lz4Error("lz4: block ends inside a sequence");
    const token = src[i++]!;
    let lit = token >>> 4;
    if (lit === 15) {
      let b: number;
      do {
        if (i >= sn) throw new Lz4Error("lz4: block ends inside a literal length");
        b = src[i++]!;
        lit += b;
      } while (b === 255);
    }
    if (lit > 0) {
      if (i + lit > sn) throw new Lz4Error("lz4: literals run past the block");
      if (o + lit > dn) throw new Lz4Error("lz4: literals run past the output");
      if (lit < 16) {
        for (let k = 0; k < lit; k++) dst[o + k] = src[i + k]!;
      } else {
        dst.set(src.subarray(i, i + lit), o);
      }
      i += lit;
      o += lit;
    }
    if (i === sn) break; // the last sequence has literals only
    if (i + 2 > sn) throw new Lz4Error("lz4: block ends inside a match offset");
    const offset = src[i]! | (src[i + 1]! << 8);
    i += 2;
    if (offset === 0 || offset > o) throw new Lz4Error("lz4: match offset outside the output");
    let len = token & 15;
    if (len === 15) {
      let b: number;
      do {
        if (i >= sn) throw new Lz4Error("lz4: block ends inside a match length");
        b = src[i++]!;
        len += b;
      } while (b === 255);
    }
    len += 4;
    if (o + len > dn) throw new Lz4Error("lz4: match runs past the output");
    let from = o - offset;
    if (offset >= len) {
      if (len < 32) {
        for (let k = 0; k < len; k++) dst[o + k] = dst[from + k]!;
      } else {
        dst.copyWithin(o, from, from + len);
      }
      o += len;
    } else {
      // Overlapping match: a pattern of period `offset` repeated. Copy what is already there,
      // doubling each time: dst[from..o] stays a whole number of periods, so a run of 2 MB of
      // zeros (offset 1) takes ~21 copies instead of 2 million byte moves.
      const end = o + len;
      if (len < 32) {
        while (o < end) dst[o++] = dst[from++]!;
      } else {
        while (o < end) {
          const n = Math.min(o - from, end - o);
          dst.copyWithin(o, from, from + n);
          o += n;
        }
      }
    }
  }
  if (o !== dn) throw new Lz4Error(`lz4: decoded ${o} bytes, expected ${dn}`);
}

// The viewer's picture: grey rows kept as a ring (as crates/codec/src/picture.rs), so a scroll
// moves `top` and copies |dy| rows instead of the whole picture. Slots that changed are marked
// so the renderer uploads only them; the renderer samples row y at slot (top + y) mod height.

import { decodeBlock } from "./lz4";
import { decodeZstd } from "./zstd";
import { hash64, hashInto } from "./checksum";
import { Codec, FrameFlags, type U64 } from "./v1";

export class DecodeError extends Error {}

/** The row plan of a row delta: dy, then ascending disjoint (y0, rows) ranges. */
export interface RowPlan {
  dy: number;
  ranges: Array<[number, number]>;
  headerLen: number;
}

export function parseRowPlan(payload: Uint8Array, width: number, height: number, rawLen: number): RowPlan {
  if (payload.length < 8) throw new DecodeError("row delta shorter than its header");
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const dy = v.getInt32(0, true);
  const n = v.getUint32(4, true);
  if (Math.abs(dy) >= height) throw new DecodeError(`row shift ${dy} out of range`);
  if (n > height) throw new DecodeError(`${n} row ranges for ${height} rows`);
  if (payload.length < 8 + n * 8) throw new DecodeError("row delta shorter than its ranges");
  const ranges: Array<[number, number]> = [];
  let next = 0;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const y0 = v.getUint32(8 + i * 8, true);
    const rows = v.getUint32(12 + i * 8, true);
    if (rows === 0 || y0 < next || y0 + rows > height)
      throw new DecodeError("row ranges must be ascending, non-empty, disjoint and inside the picture");
    next = y0 + rows;
    total += rows;
    ranges.push([y0, rows]);
  }
  if (total * width !== rawLen) throw new DecodeError(`row delta raw_len ${rawLen} is not ${total} rows`);
  return { dy, ranges, headerLen: 8 + n * 8 };
}

/** A rectangle of the picture. */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * A predicted rectangle: mode 0 predicts every plane from its neighbours; mode 1 (colour only)
 * predicts planes 1 and 2 from the colour cache where set.
 */
export interface PredictedRect extends Rect {
  mode: number;
}

/**
 * A moved-rectangle delta's header: moves (`to` takes the old pixels at `to` + (dx, dy)), then
 * patches, then (bit 15 of nmoves) predicted rectangles, in the first of `planes` stacked planes.
 */
export interface RectPlan {
  moves: Array<{ to: Rect; dx: number; dy: number }>;
  patches: Rect[];
  /** Predicted rectangles (empty without bit 15), each in plane 0: y + h ≤ height / planes. */
  predicted: PredictedRect[];
  /** 1 (grey) or 3 (colour) with predicted rectangles; 1 without. */
  planes: number;
  headerLen: number;
}

export const MAX_MOVES = 64;
/** Bit 15 of nmoves: predicted rectangles follow the patches. */
export const PREDICTED_BIT = 0x8000;

export function parseRectPlan(payload: Uint8Array, width: number, height: number, rawLen: number): RectPlan {
  if (payload.length < 4) throw new DecodeError("moved-rectangle delta shorter than its header");
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const nMovesField = v.getUint16(0, true);
  const hasPredicted = (nMovesField & PREDICTED_BIT) !== 0;
  const nMoves = nMovesField & ~PREDICTED_BIT;
  const nPatches = v.getUint16(2, true);
  if (nMoves > MAX_MOVES) throw new DecodeError(`${nMoves} moves (at most ${MAX_MOVES})`);
  if (nPatches > height) throw new DecodeError(`${nPatches} patches for ${height} rows`);
  let headerLen = 4 + nMoves * 12 + nPatches * 8;
  if (payload.length < headerLen) throw new DecodeError("moved-rectangle delta shorter than its rectangles");
  const rect = (o: number, rows: number): Rect => {
    const r = { x: v.getUint16(o, true), y: v.getUint16(o + 2, true), w: v.getUint16(o + 4, true), h: v.getUint16(o + 6, true) };
    if (r.w === 0 || r.h === 0 || r.x + r.w > width || r.y + r.h > rows)
      throw new DecodeError("an empty rectangle or one outside the picture");
    return r;
  };
  const moves: RectPlan["moves"] = [];
  for (let i = 0; i < nMoves; i++) {
    const o = 4 + i * 12;
    const to = rect(o, height);
    const dx = v.getInt16(o + 8, true);
    const dy = v.getInt16(o + 10, true);
    if (to.x + dx < 0 || to.y + dy < 0 || to.x + dx + to.w > width || to.y + dy + to.h > height)
      throw new DecodeError("a move from outside the picture");
    moves.push({ to, dx, dy });
  }
  const patches: Rect[] = [];
  let area = 0;
  for (let i = 0; i < nPatches; i++) {
    const r = rect(4 + nMoves * 12 + i * 8, height);
    area += r.w * r.h;
    if (area > width * height) throw new DecodeError("patches larger than the picture");
    patches.push(r);
  }
  const predicted: PredictedRect[] = [];
  let planes = 1;
  let predArea = 0;
  if (hasPredicted) {
    if (payload.length < headerLen + 3) throw new DecodeError("moved-rectangle delta shorter than its predicted header");
    const nPred = v.getUint16(headerLen, true);
    planes = v.getUint8(headerLen + 2);
    if (planes !== 1 && planes !== 3) throw new DecodeError(`${planes} planes (1 or 3)`);
    if (height % planes !== 0) throw new DecodeError(`${planes} planes do not divide ${height} rows`);
    const planeRows = height / planes;
    if (nPred > planeRows) throw new DecodeError(`${nPred} predicted rectangles for ${planeRows} rows`);
    const at = headerLen + 3;
    headerLen = at + nPred * 9;
    if (payload.length < headerLen) throw new DecodeError("moved-rectangle delta shorter than its predicted rectangles");
    for (let i = 0; i < nPred; i++) {
      const r = rect(at + i * 9, planeRows);
      const mode = v.getUint8(at + i * 9 + 8);
      if (mode > 1 || (mode === 1 && planes !== 3))
        throw new DecodeError(`predicted rectangle mode ${mode} with ${planes} planes`);
      predArea += r.w * r.h;
      if (predArea > width * planeRows) throw new DecodeError("predicted rectangles larger than a plane");
      predicted.push({ ...r, mode });
    }
  }
  const want = area + planes * predArea;
  if (want !== rawLen)
    throw new DecodeError(`moved-rectangle delta raw_len ${rawLen} is not its patches' and predicted rectangles' ${want}`);
  return { moves, patches, predicted, planes, headerLen };
}

/** A copy of a picture, kept so a later delta may name it as its base. */
export interface SavedPicture {
  data: Uint8Array;
  hashes: Uint8Array;
  top: number;
}

export class Picture {
  readonly data: Uint8Array;
  /** xxh3 of each row, in row order (not ring order), 8 LE bytes each. */
  readonly hashes: Uint8Array;
  /** Slot of row 0. */
  top = 0;
  /** Slots changed since the renderer last took them (1 = changed). */
  readonly dirty: Uint8Array;
  allDirty = true;
  valid = false;
  private scratch = new Uint8Array(0);
  /** The picture before a moved-rectangle delta's moves, which all read from it. */
  private before = new Uint8Array(0);
  /** The colour cache of predicted rectangles (-1 = empty), emptied for each frame that uses it. */
  private t1: Int16Array | null = null;
  private t2: Int16Array | null = null;

  constructor(readonly width: number, readonly height: number) {
    this.data = new Uint8Array(width * height);
    this.hashes = new Uint8Array(height * 8);
    this.dirty = new Uint8Array(height);
  }

  private slot(y: number): number {
    return (this.top + y) % this.height;
  }

  private scratchOf(n: number): Uint8Array {
    if (this.scratch.length < n) this.scratch = new Uint8Array(n);
    return this.scratch.subarray(0, n);
  }

  private decompress(codec: number, payload: Uint8Array, out: Uint8Array): void {
    if (codec === Codec.Lz4) decodeBlock(payload, out);
    else if (codec === Codec.Raw) {
      if (payload.length !== out.length) throw new DecodeError("raw payload of the wrong size");
      out.set(payload);
    } else if (codec === Codec.Zstd) decodeZstd(payload, out);
    else throw new DecodeError(`unknown codec ${codec}`);
  }

  /**
   * Decodes and applies one Frame. Throws DecodeError (or Lz4Error) on a bad payload; the
   * picture is then invalid and only a keyframe is accepted.
   */
  apply(flags: number, codec: number, rawLen: number, payload: Uint8Array): void {
    const w = this.width;
    const h = this.height;
    try {
      if (flags & FrameFlags.Keyframe) {
        if (rawLen !== w * h) throw new DecodeError(`keyframe of ${rawLen} bytes for ${w}x${h}`);
        this.top = 0;
        this.decompress(codec, payload, this.data);
        for (let y = 0; y < h; y++) hashInto(this.data.subarray(y * w, (y + 1) * w), this.hashes, y * 8);
        this.allDirty = true;
        this.valid = true;
        return;
      }
      if (!this.valid) throw new DecodeError("a delta without a picture to apply it to");
      if (flags & FrameFlags.RowDelta) {
        const plan = parseRowPlan(payload, w, h, rawLen);
        const x = this.scratchOf(rawLen);
        this.decompress(codec, payload.subarray(plan.headerLen), x);
        this.shift(plan.dy);
        let off = 0;
        for (const [y0, rows] of plan.ranges) {
          for (let y = y0; y < y0 + rows; y++) {
            const s = this.slot(y);
            const row = this.data.subarray(s * w, (s + 1) * w);
            xorInto(row, x.subarray(off, off + w));
            hashInto(row, this.hashes, y * 8);
            this.dirty[s] = 1;
            off += w;
          }
        }
        return;
      }
      if (flags & FrameFlags.RectDelta) {
        const plan = parseRectPlan(payload, w, h, rawLen);
        const x = this.scratchOf(rawLen);
        this.decompress(codec, payload.subarray(plan.headerLen), x);
        this.applyRects(plan, x);
        return;
      }
      if (rawLen !== w * h) throw new DecodeError(`delta of ${rawLen} bytes for ${w}x${h}`);
      const x = this.scratchOf(rawLen);
      this.decompress(codec, payload, x);
      for (let y = 0; y < h; y++) {
        const s = this.slot(y);
        const row = this.data.subarray(s * w, (s + 1) * w);
        const xr = x.subarray(y * w, (y + 1) * w);
        if (xorInto(row, xr)) {
          hashInto(row, this.hashes, y * 8);
          this.dirty[s] = 1;
        }
      }
    } catch (e) {
      this.valid = false;
      throw e;
    }
  }

  /**
   * Moves (each reads the picture as it was before the first), then patches XORed in order,
   * then predicted rectangles replacing their pixels in every plane.
   * A single move that is the whole picture shifted vertically moves the ring's top instead.
   */
  private applyRects(plan: RectPlan, x: Uint8Array): void {
    const w = this.width;
    const h = this.height;
    const touched = new Uint8Array(h);
    const m0 = plan.moves[0];
    const d = m0 ? Math.abs(m0.dy) : 0;
    if (plan.moves.length === 1 && m0 && m0.dx === 0 && d > 0 && m0.to.x === 0 && m0.to.w === w
        && m0.to.y === (m0.dy < 0 ? d : 0) && m0.to.h + d === h) {
      this.shift(m0.dy);
    } else if (plan.moves.length > 0) {
      if (this.before.length !== this.data.length) this.before = new Uint8Array(this.data.length);
      this.before.set(this.data);
      // A row is hashed again only when its pixels may have become something new. A whole
      // row moved straight up or down takes its source's hash (its slot is still redrawn); a
      // row a move straight up or down fills from an equal old row (the R − G and B − G rows
      // of grey content: zeros) is unchanged. `hashes` holds, for a row not touched, the hash
      // of the whole row it equals so far.
      const old = this.hashes.slice();
      const moved = new Uint8Array(h);
      for (const m of plan.moves) {
        const whole = m.dx === 0 && m.to.x === 0 && m.to.w === w;
        for (let y = m.to.y; y < m.to.y + m.to.h; y++) {
          const to = this.slot(y) * w + m.to.x;
          const from = this.slot(y + m.dy) * w + m.to.x + m.dx;
          this.data.set(this.before.subarray(from, from + m.to.w), to);
          const src = (y + m.dy) * 8;
          if (whole) {
            this.hashes.set(old.subarray(src, src + 8), y * 8);
            touched[y] = 0;
            moved[y] = 1;
          } else if (m.dx !== 0 || !sameHash(old, src, this.hashes, y * 8)) {
            touched[y] = 1;
          }
        }
      }
      for (let y = 0; y < h; y++) if (moved[y] && !touched[y]) this.dirty[this.slot(y)] = 1;
    }
    let off = 0;
    for (const r of plan.patches) {
      for (let y = r.y; y < r.y + r.h; y++) {
        const at = this.slot(y) * w + r.x;
        xorInto(this.data.subarray(at, at + r.w), x.subarray(off, off + r.w));
        off += r.w;
        touched[y] = 1;
      }
    }
    if (plan.predicted.length > 0) this.applyPredicted(plan, x, off, touched);
    for (let y = 0; y < h; y++) {
      if (!touched[y]) continue;
      const s = this.slot(y);
      hashInto(this.data.subarray(s * w, (s + 1) * w), this.hashes, y * 8);
      this.dirty[s] = 1;
    }
  }

  /**
   * Each predicted rectangle in order replaces its pixels in every plane: row by row, left to
   * right, each pixel's planes 0, 1, 2; the spatial prediction is JPEG-LS's median edge
   * detector over the rectangle's own decoded pixels (0 at its corner, left in its first row,
   * above in its first column). In mode 1, planes 1 and 2 predict from the colour cache T1[g]
   * and T2[256 g + v] when set; in mode 0 from the spatial prediction. Every colour pixel
   * updates T1 and T2, whatever its rectangle's mode. Residuals start at `off` in `x`: plane by
   * plane, rectangle by rectangle, row by row. Every row written is marked in `touched`.
   */
  private applyPredicted(plan: RectPlan, x: Uint8Array, off: number, touched: Uint8Array): void {
    const w = this.width;
    const d = this.data;
    const ph = this.height / plan.planes;
    let total = 0;
    for (const r of plan.predicted) total += r.w * r.h;
    let t1 = this.t1;
    let t2 = this.t2;
    if (plan.planes === 3) {
      t1 = this.t1 ??= new Int16Array(256);
      t2 = this.t2 ??= new Int16Array(65536);
      t1.fill(-1);
      t2.fill(-1);
    }
    let start = off;
    for (const r of plan.predicted) {
      const rw = r.w;
      const cache = r.mode === 1;
      for (let i = 0; i < r.h; i++) {
        const y = r.y + i;
        const first = i === 0;
        // Where the rectangle's rows i and i - 1 start in the ring, plane by plane.
        const row0 = this.slot(y) * w + r.x;
        const up0 = first ? row0 : this.slot(y - 1) * w + r.x;
        const res0 = start + i * rw;
        touched[y] = 1;
        if (plan.planes === 1 || t1 === null || t2 === null) {
          let a = 0;
          let c = 0;
          for (let j = 0; j < rw; j++) {
            const b = first ? 0 : d[up0 + j]!;
            a = (spatial(first, j, a, b, c) + x[res0 + j]!) & 255;
            d[row0 + j] = a;
            c = b;
          }
          continue;
        }
        const row1 = this.slot(ph + y) * w + r.x;
        const up1 = first ? row1 : this.slot(ph + y - 1) * w + r.x;
        const row2 = this.slot(2 * ph + y) * w + r.x;
        const up2 = first ? row2 : this.slot(2 * ph + y - 1) * w + r.x;
        const res1 = res0 + total;
        const res2 = res1 + total;
        touched[ph + y] = 1;
        touched[2 * ph + y] = 1;
        let a0 = 0, a1 = 0, a2 = 0, c0 = 0, c1 = 0, c2 = 0;
        for (let j = 0; j < rw; j++) {
          let b0 = 0, b1 = 0, b2 = 0;
          if (!first) {
            b0 = d[up0 + j]!;
            b1 = d[up1 + j]!;
            b2 = d[up2 + j]!;
          }
          const g = (spatial(first, j, a0, b0, c0) + x[res0 + j]!) & 255;
          d[row0 + j] = g;
          const p1 = cache ? t1[g]! : -1;
          const v = ((p1 >= 0 ? p1 : spatial(first, j, a1, b1, c1)) + x[res1 + j]!) & 255;
          d[row1 + j] = v;
          t1[g] = v;
          const k2 = (g << 8) | v;
          const p2 = cache ? t2[k2]! : -1;
          const u = ((p2 >= 0 ? p2 : spatial(first, j, a2, b2, c2)) + x[res2 + j]!) & 255;
          d[row2 + j] = u;
          t2[k2] = u;
          a0 = g; a1 = v; a2 = u;
          c0 = b0; c1 = b1; c2 = b2;
        }
      }
      start += rw * r.h;
    }
  }

  /** Row y becomes old row y + dy where that exists, and keeps its content where not. */
  private shift(dy: number): void {
    const w = this.width;
    const h = this.height;
    const d = Math.abs(dy);
    if (d === 0) return;
    const oldTop = this.top;
    const newTop = dy > 0 ? (oldTop + d) % h : (oldTop + h - d) % h;
    // The rows that keep their content, copied to the slots they will occupy. When they
    // overlap their destinations, go through a copy.
    const kept = dy > 0 ? [h - d, h] : [0, d];
    const tmp = 2 * d > h ? this.data.slice() : this.data;
    for (let y = kept[0]!; y < kept[1]!; y++) {
      const from = (oldTop + y) % h;
      const to = (newTop + y) % h;
      this.data.set(tmp.subarray(from * w, (from + 1) * w), to * w);
      this.dirty[to] = 1;
    }
    this.top = newTop;
    // Hashes follow the same rule, in row order.
    if (dy > 0) this.hashes.copyWithin(0, d * 8, h * 8);
    else this.hashes.copyWithin(d * 8, 0, (h - d) * 8);
    // Every slot now shows a different row: the renderer's offset changes, not its texels,
    // except the kept rows marked above.
  }

  checksum(): U64 {
    return hash64(this.hashes);
  }

  /** Copies the picture into `into` (reusing its buffers when they fit). */
  save(into?: SavedPicture): SavedPicture {
    const s = into && into.data.length === this.data.length ? into : {
      data: new Uint8Array(this.data.length),
      hashes: new Uint8Array(this.hashes.length),
      top: 0,
    };
    s.data.set(this.data);
    s.hashes.set(this.hashes);
    s.top = this.top;
    return s;
  }

  /**
   * Makes the saved picture (of this size) the picture, valid. Only the ring slots whose row
   * differs (by row hash) are marked for the renderer: a picture a frame or two older mostly
   * holds the same rows in the same slots, and uploading the whole texture again would cost
   * more than the frame.
   */
  restore(from: SavedPicture): boolean {
    if (from.data.length !== this.data.length) return false;
    const h = this.height;
    if (this.valid && !this.allDirty) {
      const a = this.hashes;
      const b = from.hashes;
      for (let s = 0; s < h; s++) {
        const ya = ((s - this.top + h) % h) * 8;
        const yb = ((s - from.top + h) % h) * 8;
        for (let k = 0; k < 8; k++) {
          if (a[ya + k] !== b[yb + k]) {
            this.dirty[s] = 1;
            break;
          }
        }
      }
    } else this.allDirty = true;
    this.data.set(from.data);
    this.hashes.set(from.hashes);
    this.top = from.top;
    this.valid = true;
    return true;
  }

  /** The picture in row order (for tests and screenshots). */
  rows(): Uint8Array {
    const w = this.width;
    const out = new Uint8Array(w * this.height);
    const first = (this.height - this.top) * w;
    out.set(this.data.subarray(this.top * w), 0);
    out.set(this.data.subarray(0, this.top * w), first);
    return out;
  }
}

/**
 * The spatial prediction of a predicted rectangle's pixel in column j, from the values already
 * decoded in the same plane and rectangle: a left, b above, c above-left (b and c unused in its
 * first row, a and c in its first column).
 */
function spatial(first: boolean, j: number, a: number, b: number, c: number): number {
  if (j === 0) return first ? 0 : b;
  if (first) return a;
  const mx = a > b ? a : b;
  const mn = a > b ? b : a;
  return c >= mx ? mn : c <= mn ? mx : a + b - c;
}

/** row ^= x; returns whether anything changed. Works 4 bytes at a time where aligned. */
export function xorInto(row: Uint8Array, x: Uint8Array): boolean {
  const n = row.length;
  let any = 0;
  let i = 0;
  if ((row.byteOffset & 3) === 0 && (x.byteOffset & 3) === 0) {
    const a = new Uint32Array(row.buffer, row.byteOffset, n >>> 2);
    const b = new Uint32Array(x.buffer, x.byteOffset, n >>> 2);
    for (let k = 0; k < a.length; k++) {
      const v = b[k]!;
      any |= v;
      a[k]! ^= v;
    }
    i = a.length * 4;
  }
  for (; i < n; i++) {
    const v = x[i]!;
    any |= v;
    row[i]! ^= v;
  }
  return any !== 0;
}

/** Whether the 8-byte row hashes at `i` in `a` and `j` in `b` are equal. */
function sameHash(a: Uint8Array, i: number, b: Uint8Array, j: number): boolean {
  for (let k = 0; k < 8; k++) if (a[i + k] !== b[j + k]) return false;
  return true;
}

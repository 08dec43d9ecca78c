// framewire v1 framing and packets (spec/PROTOCOL.md), for the browser. Bodies are parsed with
// every bound the Rust decoder applies; the shared vectors in spec/vectors check both.

export const VERSION = 1;
export const MAX_CONTROL_BODY = 4096;
export const MAX_FRAME_BODY = 50_529_091; // a 4096×4096 colour frame (3 planes), LZ4 worst case, + fields
const HEADER = 7;

export const T = {
  Hello: 0x01,
  Welcome: 0x02,
  StreamDesc: 0x03,
  Frame: 0x10,
  Unchanged: 0x11,
  Ack: 0x20,
  KeyframeRequest: 0x21,
  Input: 0x22,
  Ping: 0x30,
  Pong: 0x31,
  Command: 0x40,
  Sample: 0x50,
  Thermal: 0x51,
  Missed: 0x52,
  Goodbye: 0x7f,
} as const;

export const Role = { Viewer: 1, Publisher: 2, Control: 3, Subscriber: 4 } as const;
export const Caps = { Lz4: 1, Zstd: 2, Unchanged: 4, Xxh3: 8, MovedRects: 16, Colour: 32, NamedBases: 64, PredictedRects: 128 } as const;
/** StreamDesc formats: grey, or three planes G, R − G, B − G stacked (lossless colour). */
export const PixelFormat = { Grey8: 1, PlanarGDiff: 2 } as const;
export const Codec = { Raw: 0, Lz4: 1, Zstd: 2 } as const;
export const AckStatus = { Applied: 0, ChecksumMismatch: 1, DecodeError: 2, BaseMissing: 3 } as const;
/** Bits 0–2: the frame's kind (at most one); bit 3: a base checksum follows raw_len. */
export const FrameFlags = { Keyframe: 1, RowDelta: 2, RectDelta: 4, Based: 8 } as const;

/** A u64 as two u32 halves (checksums), compared without BigInt on the hot path. */
export interface U64 {
  lo: number;
  hi: number;
}

export type Packet =
  | { type: typeof T.Welcome; version: number; caps: number; session: number }
  | { type: typeof T.StreamDesc; width: number; height: number; format: number; codec: number; name: string }
  | {
      type: typeof T.Frame;
      seq: number;
      captureUs: number;
      flags: number;
      codec: number;
      checksum: U64;
      rawLen: number;
      /** The checksum of the picture this delta applies to (named bases), or null. */
      base: U64 | null;
      payload: Uint8Array;
    }
  | { type: typeof T.Unchanged; seq: number; captureUs: number; checksum: U64 }
  | { type: typeof T.Ping; id: number; sentUs: number }
  | { type: typeof T.Pong; id: number; pingSentUs: number; replyUs: number }
  | { type: typeof T.Command; code: number; a: number; b: number }
  | {
      type: typeof T.Sample;
      stream: string;
      device: string;
      deviceSeq: number;
      acceptedUs: number;
      readings: Array<[string, number]>;
    }
  | {
      type: typeof T.Thermal;
      stream: string;
      device: string;
      deviceSeq: number;
      acceptedUs: number;
      width: number;
      height: number;
      values: Uint16Array;
    }
  | { type: typeof T.Missed; samples: number }
  | { type: typeof T.Goodbye; code: number; reason: string };

export class ProtocolError extends Error {}

const KNOWN = new Set<number>(Object.values(T));
const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8enc = new TextEncoder();

/** Reads a body field by field; any read past the end is a ProtocolError. */
class Reader {
  private o = 0;
  private readonly v: DataView;
  constructor(private readonly b: Uint8Array) {
    this.v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  private need(n: number): void {
    if (this.o + n > this.b.length) throw new ProtocolError("body too short");
  }
  u8(): number {
    this.need(1);
    return this.b[this.o++]!;
  }
  u16(): number {
    this.need(2);
    const x = this.v.getUint16(this.o, true);
    this.o += 2;
    return x;
  }
  u32(): number {
    this.need(4);
    const x = this.v.getUint32(this.o, true);
    this.o += 4;
    return x;
  }
  i64(): number {
    this.need(8);
    const x = Number(this.v.getBigInt64(this.o, true));
    this.o += 8;
    return x;
  }
  f64(): number {
    this.need(8);
    const x = this.v.getFloat64(this.o, true);
    this.o += 8;
    return x;
  }
  /** A u64 as a number: exact below 2^53, which sequence numbers and µs timestamps stay. */
  u64(): number {
    const lo = this.u32();
    const hi = this.u32();
    return hi * 0x1_0000_0000 + lo;
  }
  u64pair(): U64 {
    const lo = this.u32();
    const hi = this.u32();
    return { lo, hi };
  }
  bytes(n: number): Uint8Array {
    this.need(n);
    const s = this.b.subarray(this.o, this.o + n);
    this.o += n;
    return s;
  }
  str(n: number): string {
    try {
      return utf8.decode(this.bytes(n));
    } catch (e) {
      if (e instanceof ProtocolError) throw e;
      throw new ProtocolError("invalid UTF-8");
    }
  }
  str8(): string {
    return this.str(this.u8());
  }
  rest(): Uint8Array {
    return this.bytes(this.b.length - this.o);
  }
  end(): void {
    if (this.o !== this.b.length) throw new ProtocolError("trailing bytes in body");
  }
}

function fixed(type: number, len: number, want: number): void {
  if (len !== want) throw new ProtocolError(`${kindName(type)} body is ${len} bytes, expected ${want}`);
}

export function kindName(type: number): string {
  for (const [k, v] of Object.entries(T)) if (v === type) return k;
  return `0x${type.toString(16)}`;
}

/** Parses one packet body. Payloads are views into `body`: use them before the next push. */
export function parseBody(type: number, body: Uint8Array): Packet {
  const r = new Reader(body);
  let p: Packet;
  switch (type) {
    case T.Welcome:
      fixed(type, body.length, 14);
      p = { type, version: r.u16(), caps: r.u32(), session: r.u64() };
      break;
    case T.StreamDesc: {
      const width = r.u32();
      const height = r.u32();
      const format = r.u8();
      const codec = r.u8();
      const name = r.str8();
      if (width < 1 || height < 1 || width > 16384 || height > 16384)
        throw new ProtocolError(`stream size ${width}x${height} out of range`);
      if (format !== 1 && format !== 2) throw new ProtocolError(`unknown picture format ${format}`);
      if (codec > 2) throw new ProtocolError(`unknown codec ${codec}`);
      p = { type, width, height, format, codec, name };
      break;
    }
    case T.Frame: {
      const seq = r.u64();
      const captureUs = r.u64();
      const flags = r.u8();
      const codec = r.u8();
      const checksum = r.u64pair();
      const rawLen = r.u32();
      // At most one of keyframe, row delta and moved-rectangle delta; a base never with a keyframe.
      const kind = flags & 7;
      if (flags & ~15 || (kind & (kind - 1)) !== 0) throw new ProtocolError(`bad frame flags ${flags}`);
      const based = (flags & FrameFlags.Based) !== 0;
      if (based && kind === FrameFlags.Keyframe) throw new ProtocolError("a keyframe with a base");
      if (codec > 2) throw new ProtocolError(`unknown codec ${codec}`);
      const base = based ? r.u64pair() : null;
      p = { type, seq, captureUs, flags: kind, codec, checksum, rawLen, base, payload: r.rest() };
      break;
    }
    case T.Unchanged:
      fixed(type, body.length, 24);
      p = { type, seq: r.u64(), captureUs: r.u64(), checksum: r.u64pair() };
      break;
    case T.Ping:
      fixed(type, body.length, 12);
      p = { type, id: r.u32(), sentUs: r.u64() };
      break;
    case T.Pong:
      fixed(type, body.length, 20);
      p = { type, id: r.u32(), pingSentUs: r.u64(), replyUs: r.u64() };
      break;
    case T.Command:
      fixed(type, body.length, 9);
      p = { type, code: r.u8(), a: r.u32(), b: r.u32() };
      break;
    case T.Sample: {
      const stream = r.str8();
      const device = r.str8();
      const deviceSeq = r.u64();
      const acceptedUs = r.u64();
      const n = r.u8();
      if (n > 32) throw new ProtocolError(`${n} readings in a sample (at most 32)`);
      const readings: Array<[string, number]> = [];
      for (let i = 0; i < n; i++) {
        const key = r.str8();
        if (utf8enc.encode(key).length > 32) throw new ProtocolError("reading key over 32 bytes");
        const tag = r.u8();
        if (tag === 0) readings.push([key, r.i64()]);
        else if (tag === 1) readings.push([key, r.f64()]);
        else throw new ProtocolError(`unknown value tag ${tag}`);
      }
      p = { type, stream, device, deviceSeq, acceptedUs, readings };
      break;
    }
    case T.Thermal: {
      const stream = r.str8();
      const device = r.str8();
      const deviceSeq = r.u64();
      const acceptedUs = r.u64();
      const width = r.u16();
      const height = r.u16();
      const raw = r.rest();
      if (raw.length !== width * height * 2)
        throw new ProtocolError(`thermal grid ${width}x${height} with ${raw.length} value bytes`);
      const values = new Uint16Array(width * height);
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      for (let i = 0; i < values.length; i++) values[i] = dv.getUint16(i * 2, true);
      p = { type, stream, device, deviceSeq, acceptedUs, width, height, values };
      break;
    }
    case T.Missed:
      fixed(type, body.length, 8);
      p = { type, samples: r.u64() };
      break;
    case T.Goodbye: {
      const code = r.u16();
      const n = r.u16();
      if (n > 1024) throw new ProtocolError("goodbye reason over 1024 bytes");
      p = { type, code, reason: r.str(n) };
      break;
    }
    default:
      throw new ProtocolError(`${kindName(type)} is not sent to viewers`);
  }
  r.end();
  return p;
}

/**
 * The v1 byte stream cut into packets, from chunks of any size (WebSocket messages). Lengths
 * are checked against their bound from the header, before anything is buffered for them.
 */
export class Decoder {
  private buf = new Uint8Array(64 * 1024);
  private start = 0;
  private end = 0;

  constructor(private readonly maxFrameBody = MAX_FRAME_BODY) {}

  push(chunk: Uint8Array): void {
    if (this.end + chunk.length > this.buf.length) {
      const live = this.end - this.start;
      if (live + chunk.length <= this.buf.length && this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
      } else {
        let cap = this.buf.length;
        while (cap < live + chunk.length) cap *= 2;
        const nb = new Uint8Array(cap);
        nb.set(this.buf.subarray(this.start, this.end));
        this.buf = nb;
      }
      this.start = 0;
      this.end = live;
    }
    this.buf.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** The next whole packet's type and body (a view valid until the next push), or null. */
  nextRaw(): { type: number; body: Uint8Array } | null {
    const avail = this.end - this.start;
    if (avail < HEADER) {
      if (avail >= 1 && this.buf[this.start] !== 0x46) throw new ProtocolError("bad magic");
      return null;
    }
    const b = this.buf;
    const s = this.start;
    if (b[s] !== 0x46 || b[s + 1] !== 0x57) throw new ProtocolError("bad magic");
    const type = b[s + 2]!;
    if (!KNOWN.has(type)) throw new ProtocolError(`unknown packet type 0x${type.toString(16)}`);
    const len = (b[s + 3]! | (b[s + 4]! << 8) | (b[s + 5]! << 16)) + b[s + 6]! * 0x100_0000;
    const bound = type === T.Frame || type === T.Thermal ? this.maxFrameBody : MAX_CONTROL_BODY;
    if (len > bound) throw new ProtocolError(`${kindName(type)} body of ${len} bytes over its bound ${bound}`);
    if (avail < HEADER + len) return null;
    this.start += HEADER + len;
    if (this.start === this.end) this.start = this.end = 0;
    return { type, body: b.subarray(s + HEADER, s + HEADER + len) };
  }

  /** Bytes held that are not yet a whole packet. */
  pending(): number {
    return this.end - this.start;
  }

  next(): Packet | null {
    const raw = this.nextRaw();
    return raw === null ? null : parseBody(raw.type, raw.body);
  }
}

/** Builds one packet. */
class Writer {
  private b: Uint8Array;
  private v: DataView;
  private o = HEADER;
  constructor(private readonly type: number, cap = 64) {
    this.b = new Uint8Array(HEADER + cap);
    this.v = new DataView(this.b.buffer);
  }
  private room(n: number): void {
    if (this.o + n <= this.b.length) return;
    const nb = new Uint8Array((this.o + n) * 2);
    nb.set(this.b);
    this.b = nb;
    this.v = new DataView(nb.buffer);
  }
  u8(x: number): this {
    this.room(1);
    this.b[this.o++] = x;
    return this;
  }
  u16(x: number): this {
    this.room(2);
    this.v.setUint16(this.o, x, true);
    this.o += 2;
    return this;
  }
  u32(x: number): this {
    this.room(4);
    this.v.setUint32(this.o, x >>> 0, true);
    this.o += 4;
    return this;
  }
  i32(x: number): this {
    this.room(4);
    this.v.setInt32(this.o, x | 0, true);
    this.o += 4;
    return this;
  }
  u64(x: number): this {
    const v = Math.max(0, Math.floor(x));
    return this.u32(v % 0x1_0000_0000).u32(Math.floor(v / 0x1_0000_0000));
  }
  str8(s: string): this {
    const e = utf8enc.encode(s);
    if (e.length > 255) throw new RangeError("string over 255 bytes");
    this.u8(e.length);
    this.room(e.length);
    this.b.set(e, this.o);
    this.o += e.length;
    return this;
  }
  str16(s: string): this {
    const e = utf8enc.encode(s);
    if (e.length > 1024) throw new RangeError("reason over 1024 bytes");
    this.u16(e.length);
    this.room(e.length);
    this.b.set(e, this.o);
    this.o += e.length;
    return this;
  }
  done(): Uint8Array {
    this.b[0] = 0x46;
    this.b[1] = 0x57;
    this.b[2] = this.type;
    this.v.setUint32(3, this.o - HEADER, true);
    return this.b.slice(0, this.o);
  }
}

export function hello(role: number, caps: number, stream: string, token: string): Uint8Array {
  return new Writer(T.Hello).u16(VERSION).u8(role).u32(caps).str8(stream).str8(token).done();
}

export function ack(seq: number, status: number, recvUs: number, decodedUs: number, appliedUs: number): Uint8Array {
  return new Writer(T.Ack).u64(seq).u8(status).u64(recvUs).u64(decodedUs).u64(appliedUs).done();
}

export function keyframeRequest(reason: number): Uint8Array {
  return new Writer(T.KeyframeRequest).u8(reason).done();
}

export function ping(id: number, sentUs: number): Uint8Array {
  return new Writer(T.Ping).u32(id).u64(sentUs).done();
}

export function pong(id: number, pingSentUs: number, replyUs: number): Uint8Array {
  return new Writer(T.Pong).u32(id).u64(pingSentUs).u64(replyUs).done();
}

export function goodbye(code: number, reason: string): Uint8Array {
  return new Writer(T.Goodbye).u16(code).str16(reason).done();
}

/** Input kinds of the Input packet (viewer → host). */
export const InputKind = {
  PointerMove: 1,
  PointerDown: 2,
  PointerUp: 3,
  Wheel: 4,
  KeyDown: 5,
  KeyUp: 6,
} as const;

/**
 * Input: kind:u8, x:i32, y:i32, code:u32 — 13 bytes. Pointer kinds carry picture pixel
 * coordinates and (down/up) the button 1–3; Wheel carries dx, dy in pixels; keys carry an X11
 * keysym in `code`.
 */
export function input(kind: number, x: number, y: number, code: number): Uint8Array {
  return new Writer(T.Input).u8(kind).i32(x).i32(y).u32(code).done();
}

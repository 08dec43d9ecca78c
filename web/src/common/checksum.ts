// The v1 picture checksum (spec/PROTOCOL.md): xxh3_64 over the little-endian xxh3_64 of every
// row. xxh3 itself comes from hash-wasm (a maintained WASM build of the reference C code);
// what is ours is keeping one hash per row so a patched picture only rehashes its patched rows.

import { createXXHash3, type IHasher } from "hash-wasm";
import type { U64 } from "./v1";

let hasher: IHasher | null = null;

/** Loads the WASM module once; every other function here is synchronous afterwards. */
export async function ready(): Promise<void> {
  if (hasher === null) hasher = await createXXHash3();
}

function h(): IHasher {
  if (hasher === null) throw new Error("checksum: call ready() first");
  return hasher;
}

/** Writes xxh3_64(data) as 8 little-endian bytes at out[at..at+8]. */
export function hashInto(data: Uint8Array, out: Uint8Array, at: number): void {
  // hash-wasm's binary digest is the canonical (big-endian) form.
  const d = h().init().update(data).digest("binary");
  for (let k = 0; k < 8; k++) out[at + k] = d[7 - k]!;
}

/** xxh3_64 of `data` as two u32 halves. */
export function hash64(data: Uint8Array): U64 {
  const d = h().init().update(data).digest("binary");
  const hi = ((d[0]! << 24) | (d[1]! << 16) | (d[2]! << 8) | d[3]!) >>> 0;
  const lo = ((d[4]! << 24) | (d[5]! << 16) | (d[6]! << 8) | d[7]!) >>> 0;
  return { lo, hi };
}

/** The checksum of a picture held as row-major rows (no ring): for tests and tools. */
export function pictureChecksum(grey: Uint8Array, width: number): U64 {
  const rows = width === 0 ? 0 : grey.length / width;
  const hashes = new Uint8Array(rows * 8);
  for (let y = 0; y < rows; y++) hashInto(grey.subarray(y * width, (y + 1) * width), hashes, y * 8);
  return hash64(hashes);
}

export function sameU64(a: U64, b: U64): boolean {
  return a.lo === b.lo && a.hi === b.hi;
}

export function hexU64(a: U64): string {
  return a.hi.toString(16).padStart(8, "0") + a.lo.toString(16).padStart(8, "0");
}

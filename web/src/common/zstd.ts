// zstd payloads (a host started with `--codec zstd`, for links where bytes matter more than
// CPU). Decoding is fzstd's; what is ours is the bound: the frame header's content size is read
// and must equal the size the packet promised before anything is allocated, since fzstd would
// otherwise allocate whatever size a hostile header names.

import { decompress } from "fzstd";

export class ZstdError extends Error {}

const MAGIC = 0xfd2fb528;

/** The content size a zstd frame header declares, or null when it declares none. */
export function zstdContentSize(b: Uint8Array): number | null {
  if (b.length < 6) throw new ZstdError("zstd payload shorter than a frame header");
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint32(0, true) !== MAGIC) throw new ZstdError("not a zstd frame");
  const fhd = v.getUint8(4);
  const fcf = fhd >> 6;
  const single = (fhd >> 5) & 1;
  if (fhd & 8) throw new ZstdError("zstd frame header with its reserved bit set");
  const dictBytes = (fhd & 3) === 3 ? 4 : fhd & 3;
  const at = 5 + (single ? 0 : 1) + dictBytes;
  const sizeBytes = fcf === 0 ? single : 1 << fcf;
  if (sizeBytes === 0) return null;
  if (b.length < at + sizeBytes) throw new ZstdError("zstd frame header cut short");
  switch (sizeBytes) {
    case 1:
      return v.getUint8(at);
    case 2:
      return v.getUint16(at, true) + 256;
    case 4:
      return v.getUint32(at, true);
    default: {
      const hi = v.getUint32(at + 4, true);
      if (hi !== 0) throw new ZstdError("zstd frame larger than 4 GiB");
      return v.getUint32(at, true);
    }
  }
}

/** Decodes one zstd frame into exactly `out`; any other size, or a bad frame, is a ZstdError. */
export function decodeZstd(payload: Uint8Array, out: Uint8Array): void {
  const size = zstdContentSize(payload);
  if (size !== out.length) {
    throw new ZstdError(`zstd frame of ${size ?? "unstated"} bytes where ${out.length} were expected`);
  }
  let got: Uint8Array;
  try {
    got = decompress(payload);
  } catch (e) {
    throw new ZstdError(`corrupt zstd payload: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (got.length !== out.length) throw new ZstdError(`zstd payload decoded to ${got.length} bytes, not ${out.length}`);
  out.set(got);
}

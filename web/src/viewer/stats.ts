// The viewer's own measurements: rolling windows per stage, shown in the overlay and readable
// by tests through window.framewire.

export class Window {
  private v: number[] = [];
  constructor(private readonly cap = 300) {}
  push(x: number): void {
    this.v.push(x);
    if (this.v.length > this.cap) this.v.shift();
  }
  values(): number[] {
    return [...this.v];
  }
  median(): number {
    return percentile(this.v, 50);
  }
  p(q: number): number {
    return percentile(this.v, q);
  }
}

export function percentile(v: number[], q: number): number {
  if (v.length === 0) return 0;
  const s = [...v].sort((a, b) => a - b);
  const rank = Math.ceil((q / 100) * s.length);
  return s[Math.min(Math.max(rank, 1), s.length) - 1]!;
}

export class ViewerStats {
  frames = 0;
  keyframes = 0;
  unchanged = 0;
  checksumFailures = 0;
  decodeErrors = 0;
  /** Moved-rectangle deltas applied that carried predicted rectangles. */
  predictedFrames = 0;
  /** Frames applied whose payload was zstd (by default, the deltas with predicted rectangles). */
  zstdFrames = 0;
  /** The codec of the last frame applied (lz4, zstd or raw). */
  codec = "";
  bytes = 0;
  reconnects = 0;
  /** ms: receive → decoded and applied to the picture (LZ4, XOR, row hashes). */
  readonly decode = new Window();
  /** ms: texture upload + draw. */
  readonly draw = new Window();
  /** ms: receive → drawn, per delta frame kind. */
  readonly total = new Window();
  readonly rtt = new Window(60);
  private readonly drawnAt: number[] = [];
  private bytesAt: Array<[number, number]> = [];

  frameDrawn(now: number): void {
    this.drawnAt.push(now);
    while (this.drawnAt.length > 0 && now - this.drawnAt[0]! > 1000) this.drawnAt.shift();
  }
  received(now: number, n: number): void {
    this.bytes += n;
    this.bytesAt.push([now, n]);
    while (this.bytesAt.length > 0 && now - this.bytesAt[0]![0] > 1000) this.bytesAt.shift();
  }
  fps(): number {
    return this.drawnAt.length;
  }
  bytesPerSecond(): number {
    return this.bytesAt.reduce((a, [, n]) => a + n, 0);
  }
}

// The browser viewer: framewire v1 over WebTransport when the host serves it, else over a
// WebSocket on the page's own host (link.ts). It decodes LZ4 and XOR in TypeScript, verifies
// every checksum, draws with WebGL2, ACKs after drawing, answers pings, shows a stats overlay,
// goes fullscreen on a tap, sends input back and reconnects by itself. Over WebTransport it
// declares named bases (bases.ts): frames may arrive out of order or not at all.

import * as v1 from "../common/v1";
import { ready as checksumReady, sameU64, hexU64 } from "../common/checksum";
import { Picture } from "../common/picture";
import { Renderer } from "./render";
import { ViewerStats } from "./stats";
import { attachInput } from "./input";
import { KeptPictures, UnitOrder, unitPackets, type Unit } from "../common/bases";
import { openWebSocket, openWebTransport, type Link, type LinkEvents } from "./link";

const params = new URLSearchParams(location.search);
const token = params.get("token") ?? "";
/** Wait for the GPU after each draw so the draw time includes it (benchmarks). */
const measure = params.get("measure") === "1";
/** `?grey=1` asks for grey; the page asks for lossless colour otherwise (and falls back to
 * grey when this GPU cannot hold the three planes of the picture in one texture). */
let wantGrey = params.get("grey") === "1";
/** `?transport=websocket` never tries WebTransport. */
const wantWebTransport = params.get("transport") !== "websocket";

const canvas = document.getElementById("screen") as HTMLCanvasElement;
const overlay = document.getElementById("stats") as HTMLElement;
const statusEl = document.getElementById("status") as HTMLElement;
const stats = new ViewerStats();
const nowMs = (): number => performance.now();
const nowUs = (): number => Math.round(performance.now() * 1000);

let renderer: Renderer;
try {
  renderer = new Renderer(canvas);
} catch (e) {
  statusEl.textContent = String(e instanceof Error ? e.message : e);
  throw e;
}

let picture: Picture | null = null;
/** 3 when the picture holds colour planes (G, R − G, B − G), 1 for grey. */
let planes = 1;
let lastChecksum = "";
let link: Link | null = null;
let backoff = 250;
let pingId = 0;
let goodbyeReason = "";
/** Named bases were agreed (the Welcome has them): deltas name the picture they apply to. */
let named = false;
/** The checksum of the picture held, once verified (named bases). */
let current: v1.U64 | null = null;
let minRttMs = 0;
let basesMissing = 0;
const kept = new KeptPictures();
const holds = (sum: v1.U64): boolean => (current !== null && sameU64(current, sum)) || kept.holds(sum);
const order = new UnitOrder(
  holds,
  (u: Unit) => handleAll(u),
  nowMs,
  // A verified picture, whether or not bases are named (current and kept are only then).
  () => picture?.valid === true || current !== null || !kept.empty,
);

function setStatus(s: string): void {
  statusEl.textContent = s;
  statusEl.hidden = s === "";
}

function send(b: Uint8Array): void {
  link?.send(b);
}

/** Handles a unit's packets; whether its frame (or Unchanged) was applied. */
function handleAll(u: Unit): boolean {
  let applied = false;
  for (const p of u.packets) applied = handle(p, u.recvUs, u.recvMs) || applied;
  return applied;
}

/** With named bases, makes the picture the one with checksum `sum` (held or kept). */
function pictureAt(sum: v1.U64): boolean {
  if (!picture) return false;
  if (current !== null && sameU64(current, sum) && picture.valid) return true;
  if (!kept.restore(picture, sum)) return false;
  current = sum;
  return true;
}

/** Handles one packet; whether it was a frame or Unchanged that applied. */
function handle(p: v1.Packet, recvUs: number, recvMs: number): boolean {
  switch (p.type) {
    case v1.T.Welcome:
      backoff = 250;
      named = (p.caps & v1.Caps.NamedBases) !== 0;
      setStatus("");
      break;
    case v1.T.StreamDesc:
      planes = p.format === v1.PixelFormat.PlanarGDiff ? 3 : 1;
      if (planes === 3 && 3 * p.height > renderer.maxTextureSize()) {
        // Too tall for one texture here: reconnect asking for grey.
        console.warn(`framewire: ${p.width}×${p.height} in colour exceeds this GPU's textures; asking for grey`);
        wantGrey = true;
        link?.close();
        return false;
      }
      picture = new Picture(p.width, p.height * planes);
      kept.clear();
      current = null;
      break;
    case v1.T.Frame: {
      if (!picture) throw new v1.ProtocolError("frame before the stream description");
      const key = (p.flags & v1.FrameFlags.Keyframe) !== 0;
      if (p.base !== null && !pictureAt(p.base)) {
        // A frame before it was lost: keep the picture; the host makes the next frame
        // against one this viewer acknowledged.
        basesMissing++;
        send(v1.ack(p.seq, v1.AckStatus.BaseMissing, recvUs, nowUs(), nowUs()));
        return false;
      }
      if (!key && !picture.valid) return false; // waiting for the keyframe we asked for
      try {
        picture.apply(p.flags, p.codec, p.rawLen, p.payload);
        stats.codec = codecName(p.codec);
        if (p.codec === v1.Codec.Zstd) stats.zstdFrames++;
        if ((p.flags & v1.FrameFlags.RectDelta) !== 0 && p.payload.length >= 2 && (p.payload[1]! & 0x80) !== 0) {
          stats.predictedFrames++;
        }
      } catch (e) {
        stats.decodeErrors++;
        console.warn("framewire: decode error", e);
        send(v1.ack(p.seq, v1.AckStatus.DecodeError, recvUs, nowUs(), nowUs()));
        return false;
      }
      const decodedMs = nowMs();
      const decodedUs = nowUs();
      if (!sameU64(picture.checksum(), p.checksum)) {
        stats.checksumFailures++;
        picture.valid = false;
        current = null;
        console.warn(`framewire: checksum mismatch at frame ${p.seq}`);
        send(v1.ack(p.seq, v1.AckStatus.ChecksumMismatch, recvUs, decodedUs, nowUs()));
        return false;
      }
      renderer.draw(picture, planes);
      if (measure) renderer.finish();
      const drawnMs = nowMs();
      stats.frames++;
      if (key) stats.keyframes++;
      stats.decode.push(decodedMs - recvMs);
      stats.draw.push(drawnMs - decodedMs);
      stats.total.push(drawnMs - recvMs);
      stats.frameDrawn(drawnMs);
      lastChecksum = hexU64(p.checksum);
      if (named) {
        current = p.checksum;
        kept.keep(picture, p.checksum);
      }
      send(v1.ack(p.seq, v1.AckStatus.Applied, recvUs, decodedUs, nowUs()));
      return true;
    }
    case v1.T.Unchanged: {
      if (named) {
        // The picture it names may be a kept one (the frame before it was lost or late).
        const ok = pictureAt(p.checksum);
        if (ok && picture) {
          kept.keep(picture, p.checksum);
          stats.unchanged++;
          if (picture) renderer.draw(picture, planes);
        } else basesMissing++;
        send(v1.ack(p.seq, ok ? v1.AckStatus.Applied : v1.AckStatus.BaseMissing, recvUs, nowUs(), nowUs()));
        return ok;
      }
      if (!picture || !picture.valid) return false;
      const ok = sameU64(picture.checksum(), p.checksum);
      if (!ok) {
        stats.checksumFailures++;
        picture.valid = false;
      } else stats.unchanged++;
      send(v1.ack(p.seq, ok ? v1.AckStatus.Applied : v1.AckStatus.ChecksumMismatch, recvUs, nowUs(), nowUs()));
      return ok;
    }
    case v1.T.Ping:
      send(v1.pong(p.id, p.sentUs, nowUs()));
      break;
    case v1.T.Pong: {
      const rtt = (nowUs() - p.pingSentUs) / 1000;
      stats.rtt.push(rtt);
      minRttMs = minRttMs === 0 ? rtt : Math.min(minRttMs, rtt);
      break;
    }
    case v1.T.Command:
      if (p.code === 1) canvas.style.filter = `brightness(${Math.max(p.a, 8) / 255})`;
      break;
    case v1.T.Goodbye:
      goodbyeReason = p.reason;
      setStatus(`host said goodbye: ${p.reason}`);
      break;
    default:
      break;
  }
  return false;
}

function connect(): void {
  const dec = new v1.Decoder();
  goodbyeReason = "";
  named = false;
  current = null;
  minRttMs = 0;
  kept.clear();
  order.reset();
  setStatus("connecting…");
  let mine: Link | null = null;
  const fail = (e: unknown): void => {
    console.error("framewire: protocol error", e);
    send(v1.goodbye(1, String(e instanceof Error ? e.message : e)));
    mine?.close();
  };
  const ev: LinkEvents = {
    control(chunk) {
      const recvMs = nowMs();
      const recvUs = nowUs();
      stats.received(recvMs, chunk.length);
      try {
        dec.push(chunk);
        for (let p = dec.next(); p !== null; p = dec.next()) handle(p, recvUs, recvMs);
      } catch (e) {
        fail(e);
      }
    },
    unit(bytes) {
      const recvMs = nowMs();
      stats.received(recvMs, bytes.length);
      try {
        order.push(recvMs, nowUs(), unitPackets(bytes), minRttMs);
      } catch (e) {
        fail(e);
      }
    },
    closed() {
      if (link !== mine) return;
      link = null;
      order.reset();
      stats.reconnects++;
      const why = goodbyeReason !== "" ? goodbyeReason : "connection closed";
      setStatus(`${why}; reconnecting in ${(backoff / 1000).toFixed(1)} s`);
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 5000);
    },
  };
  const hello = (namedBases: boolean): Uint8Array => {
    const caps = v1.Caps.Lz4 | v1.Caps.Zstd | v1.Caps.Unchanged | v1.Caps.Xxh3 | v1.Caps.MovedRects | v1.Caps.PredictedRects
      | (wantGrey ? 0 : v1.Caps.Colour) | (namedBases ? v1.Caps.NamedBases : 0);
    return v1.hello(v1.Role.Viewer, caps, "screen", token);
  };
  const viaWebSocket = (): void => {
    mine = openWebSocket(ev, () => mine?.send(hello(false)));
    link = mine;
  };
  if (!wantWebTransport) return viaWebSocket();
  openWebTransport(ev).then(
    (wt) => {
      if (wt === null) return viaWebSocket();
      mine = wt;
      link = wt;
      wt.send(hello(true));
    },
    (e: unknown) => {
      console.warn("framewire: WebTransport failed, using the WebSocket:", e);
      viaWebSocket();
    },
  );
}

// Our own pings measure the round trip the overlay shows.
setInterval(() => send(v1.ping(pingId++, nowUs())), 1000);

function renderOverlay(): void {
  if (overlay.hidden) return;
  const f = (x: number): string => x.toFixed(2);
  const pic = picture ? `${picture.width}×${picture.height}` : "—";
  overlay.textContent =
    `${pic}  ${stats.fps()} fps\n` +
    `rtt ${f(stats.rtt.median())} ms\n` +
    `decode+apply ${f(stats.decode.median())} ms (p95 ${f(stats.decode.p(95))})\n` +
    `draw ${f(stats.draw.median())} ms\n` +
    `recv→drawn ${f(stats.total.median())} ms\n` +
    `${(stats.bytesPerSecond() / 1e6).toFixed(2)} MB/s  ${(stats.bytes / 1e6).toFixed(1)} MB total\n` +
    `frames ${stats.frames}  key ${stats.keyframes}  unchanged ${stats.unchanged}  ${stats.codec}\n` +
    `checksum failures ${stats.checksumFailures}  decode errors ${stats.decodeErrors}`;
}
setInterval(renderOverlay, 250);

const toggle = document.getElementById("toggle-stats") as HTMLButtonElement;
overlay.hidden = params.get("stats") === "0";
toggle.addEventListener("click", () => {
  overlay.hidden = !overlay.hidden;
  renderOverlay();
});
(document.getElementById("fullscreen") as HTMLButtonElement).addEventListener("click", () => {
  void document.documentElement.requestFullscreen?.();
});

attachInput(canvas, send, (e) => {
  // A touch while not fullscreen asks for fullscreen, and is not sent to the host.
  if (e.pointerType === "touch" && !document.fullscreenElement && document.fullscreenEnabled) {
    void document.documentElement.requestFullscreen();
    return true;
  }
  return false;
});

/** What tests and benchmarks read. */
declare global {
  interface Window {
    framewire: {
      stats: () => object;
      /** Grey: one byte a pixel; colour (planes 3): R G B. */
      readback: () => { width: number; height: number; planes: number; pixels: number[]; checksum: string };
    };
  }
}
function codecName(c: number): string {
  return c === v1.Codec.Lz4 ? "lz4" : c === v1.Codec.Zstd ? "zstd" : c === v1.Codec.Raw ? "raw" : `codec ${c}`;
}

window.framewire = {
  stats: () => ({
    frames: stats.frames,
    keyframes: stats.keyframes,
    unchanged: stats.unchanged,
    checksumFailures: stats.checksumFailures,
    decodeErrors: stats.decodeErrors,
    predictedFrames: stats.predictedFrames,
    zstdFrames: stats.zstdFrames,
    codec: stats.codec,
    reconnects: stats.reconnects,
    bytes: stats.bytes,
    connected: link !== null && link.isOpen(),
    transport: link?.kind ?? "",
    namedBases: named,
    staleFrames: order.stale,
    basesMissing,
    unitsDropped: link?.unitsDropped() ?? 0,
    decodeMs: stats.decode.values(),
    drawMs: stats.draw.values(),
    totalMs: stats.total.values(),
    rttMs: stats.rtt.values(),
    width: picture?.width ?? 0,
    height: (picture?.height ?? 0) / planes,
    planes,
    lastChecksum,
  }),
  readback: () => {
    if (!picture) throw new Error("no picture yet");
    renderer.draw(picture, planes);
    const pixels = renderer.readback();
    return { width: picture.width, height: picture.height / planes, planes, pixels: Array.from(pixels), checksum: lastChecksum };
  },
};

void checksumReady().then(connect);

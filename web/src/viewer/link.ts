// How the page's v1 bytes travel: WebTransport (HTTP/3 over QUIC) when the host serves it and
// the browser can, else a WebSocket on the page's own host.
//
// Over WebTransport the page opens one bidirectional stream for everything but frames (Hello,
// Welcome, Ack, Ping, Pong, Input, Goodbye), and the host sends each frame on a
// unidirectional stream of its own: a lost packet delays only its own frame, and a frame a
// newer one superseded is reset instead of retransmitted. The host's certificate is
// self-signed; the page pins it by the SHA-256 the host gives at /api/webtransport.

import { MAX_FRAME_BODY } from "../common/v1";

export interface LinkEvents {
  /** Bytes of the ordered control stream (on a WebSocket, everything). */
  control(chunk: Uint8Array): void;
  /** One frame stream, whole. */
  unit(bytes: Uint8Array): void;
  /** The link ended. */
  closed(why: string): void;
}

export interface Link {
  readonly kind: "webtransport" | "websocket";
  send(b: Uint8Array): void;
  isOpen(): boolean;
  close(): void;
  /** Frame streams the host reset (superseded) or that failed. */
  unitsDropped(): number;
}

/** How long the page waits for a WebTransport session before it takes the WebSocket. */
const WT_TIMEOUT_MS = 3000;
/** The most a frame stream may hold: one frame and its stream description. */
const MAX_UNIT = MAX_FRAME_BODY + 512;

interface WebTransportInfo {
  port: number;
  path: string;
  certificateHash: string;
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Where the host's WebTransport is, or null when it serves none. */
async function webTransportInfo(): Promise<WebTransportInfo | null> {
  const r = await fetch("/api/webtransport", { cache: "no-store" });
  if (!r.ok) return null;
  const j = (await r.json()) as WebTransportInfo;
  if (typeof j.port !== "number" || typeof j.path !== "string" || !/^[0-9a-f]{64}$/.test(j.certificateHash))
    throw new Error("/api/webtransport answered something else");
  return j;
}

/** Reads a frame stream to its end, refusing one larger than a frame may be. */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > MAX_UNIT) {
      await reader.cancel();
      throw new Error(`a frame stream over ${MAX_UNIT} bytes`);
    }
    parts.push(value);
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * A WebTransport session to the host, or null when the host serves none or the browser has
 * no WebTransport. Rejects when the session cannot be opened (the caller falls back).
 */
export async function openWebTransport(ev: LinkEvents): Promise<Link | null> {
  if (typeof WebTransport === "undefined") return null;
  const info = await webTransportInfo();
  if (info === null) return null;
  const url = `https://${location.hostname}:${info.port}${info.path}`;
  const wt = new WebTransport(url, {
    serverCertificateHashes: [{ algorithm: "sha-256", value: hexBytes(info.certificateHash) }],
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no WebTransport session within ${WT_TIMEOUT_MS} ms`)), WT_TIMEOUT_MS);
  });
  try {
    await Promise.race([wt.ready, timeout]);
  } catch (e) {
    wt.close();
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const bidi = await wt.createBidirectionalStream();
  const writer = bidi.writable.getWriter();
  let open = true;
  let dropped = 0;
  let ended = false;
  const end = (why: string): void => {
    if (ended) return;
    ended = true;
    open = false;
    ev.closed(why);
  };
  void (async () => {
    const r = bidi.readable.getReader();
    try {
      for (;;) {
        const { value, done } = await r.read();
        if (done) break;
        ev.control(value);
      }
      end("connection closed");
    } catch (e) {
      end(String(e instanceof Error ? e.message : e));
    }
  })();
  void (async () => {
    const streams = wt.incomingUnidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await streams.read();
        if (done) break;
        // Each frame on its own: a frame still arriving never holds up a newer one.
        readAll(value).then(
          (b) => {
            if (open) ev.unit(b);
          },
          () => dropped++,
        );
      }
    } catch {
      // The session ended; the control stream reports it.
    }
  })();
  wt.closed.then(
    () => end("connection closed"),
    (e: unknown) => end(String(e instanceof Error ? e.message : e)),
  );
  return {
    kind: "webtransport",
    send(b) {
      if (open) writer.write(b).catch(() => end("write failed"));
    },
    isOpen: () => open,
    close() {
      open = false;
      wt.close();
    },
    unitsDropped: () => dropped,
  };
}

/** framewire v1 inside WebSocket binary messages, on the page's own host. */
export function openWebSocket(ev: LinkEvents, onOpen: () => void): Link {
  const sock = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  sock.binaryType = "arraybuffer";
  sock.onopen = onOpen;
  sock.onmessage = (m: MessageEvent<ArrayBuffer>) => ev.control(new Uint8Array(m.data));
  sock.onclose = () => ev.closed("connection closed");
  return {
    kind: "websocket",
    send(b) {
      if (sock.readyState === WebSocket.OPEN) sock.send(b);
    },
    isOpen: () => sock.readyState === WebSocket.OPEN,
    close: () => sock.close(),
    unitsDropped: () => 0,
  };
}

// What the viewer tests check pictures with: the spec's checksum computed here in Node from
// pixels read back off the canvas, the colour planes, and a page that has drawn n frames.
import { createXXHash3 } from "hash-wasm";
import { until } from "./harness.mjs";

/** The spec's picture checksum: xxh3 of each row, then xxh3 of the row hashes (LE). */
export async function checksumOf(grey, width) {
  const h = await createXXHash3();
  const rows = grey.length / width;
  const hashes = Buffer.alloc(rows * 8);
  for (let y = 0; y < rows; y++) {
    const be = Buffer.from(h.init().update(grey.subarray(y * width, (y + 1) * width)).digest("binary"));
    hashes.set(be.reverse(), y * 8);
  }
  return h.init().update(hashes).digest("hex");
}

/** Opens the page with `query` and waits until it has drawn `n` frames; returns the page and its stats. */
export async function drawn(server, browser, query, n, viewport, prepare = async () => {}) {
  // The host's certificate is self-signed: a user trusts it once; the test browser is told to.
  const page = await browser.newPage({ viewport, ignoreHTTPSErrors: server.url.startsWith("https:") });
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  page.logs = logs;
  await prepare(page);
  await page.goto(`${server.url}/?${query}`);
  const s = await until(`${n} frames drawn`, async () => {
    const st = await page.evaluate(() => window.framewire.stats());
    return st.frames >= n ? st : null;
  }, 60000).catch((e) => {
    throw new Error(`${e.message}; page log: ${logs.join(" | ")}; server: ${server.stderr()}`);
  });
  return { page, s };
}

/** R G B pixels to the planes G, R − G, B − G (mod 256), stacked: the spec's colour format. */
export function planesOf(rgb, width, height) {
  const n = width * height;
  const out = new Uint8Array(3 * n);
  for (let i = 0; i < n; i++) {
    const [r, g, b] = [rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]];
    out[i] = g;
    out[n + i] = (r - g) & 255;
    out[2 * n + i] = (b - g) & 255;
  }
  return out;
}


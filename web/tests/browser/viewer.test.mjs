// The browser viewer in real headless Chromium against a real server: frames arrive, every
// checksum verifies, and the canvas read back from WebGL is the picture whose checksum the host
// sent (computed here, in Node, from the canvas pixels).
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdirSync } from "node:fs";
import { createXXHash3 } from "hash-wasm";
import { withServerAndBrowser, until, root } from "./harness.mjs";

async function checksumOf(grey, width) {
  const h = await createXXHash3();
  const rows = grey.length / width;
  const hashes = Buffer.alloc(rows * 8);
  for (let y = 0; y < rows; y++) {
    const be = Buffer.from(h.init().update(grey.subarray(y * width, (y + 1) * width)).digest("binary"));
    hashes.set(be.reverse(), y * 8);
  }
  return h.init().update(hashes).digest("hex");
}

test("the page receives a scrolling desktop, verifies it, and draws exactly the host's picture", { timeout: 120000 }, async () => {
  await withServerAndBrowser(["--source", "synthetic", "--scene", "scroll", "--resolution", "sharp", "--no-daylight"], async (server, browser) => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 960 } });
    const logs = [];
    page.on("console", (m) => logs.push(m.text()));
    page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
    await page.goto(`${server.url}/?measure=1`);
    const s = await until("300 frames drawn", async () => {
      const st = await page.evaluate(() => window.framewire.stats());
      return st.frames >= 300 ? st : null;
    }, 60000).catch((e) => {
      throw new Error(`${e.message}; page log: ${logs.join(" | ")}; server: ${server.stderr()}`);
    });
    assert.equal(s.width, 1600);
    assert.equal(s.height, 1200);
    assert.equal(s.checksumFailures, 0, "checksum failures");
    assert.equal(s.decodeErrors, 0, "decode errors");
    assert.ok(s.frames - s.keyframes > 200, `deltas applied (${s.frames} frames, ${s.keyframes} keyframes)`);

    // Stop the source so the picture holds still, then compare the canvas with the checksum.
    const shot = await page.evaluate(() => window.framewire.readback());
    const grey = Uint8Array.from(shot.grey);
    assert.equal(grey.length, 1600 * 1200);
    assert.equal(await checksumOf(grey, 1600), shot.checksum, "canvas pixels match the host's checksum");
    assert.ok(new Set(grey.subarray(0, 160000)).size > 2, "the picture is not blank");

    const ms = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
    const report = {
      scene: "scroll",
      resolution: "1600x1200",
      frames: s.frames,
      decode_apply_ms_median: ms(s.decodeMs),
      draw_ms_median: ms(s.drawMs),
      decode_draw_ms_median: ms(s.totalMs),
      decode_draw_ms_p95: [...s.totalMs].sort((a, b) => a - b)[Math.floor(s.totalMs.length * 0.95)],
      samples: s.totalMs.length,
    };
    mkdirSync(`${root}/target/web`, { recursive: true });
    // The README's screenshot (docs/images/browser-viewer.png is a copy of this one).
    await page.screenshot({ path: `${root}/target/web/viewer-screenshot.png` });
    writeFileSync(`${root}/target/web/viewer-timing.json`, JSON.stringify(report, null, 2));
    console.log(`browser viewer: ${JSON.stringify(report)}`);
  });
});

test("with --codec zstd the page, which declares only LZ4, gets LZ4 and shows a verified picture", { timeout: 120000 }, async () => {
  await withServerAndBrowser(["--source", "synthetic", "--scene", "scroll", "--resolution", "640x480", "--codec", "zstd", "--no-daylight"], async (server, browser) => {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    const logs = [];
    page.on("console", (m) => logs.push(m.text()));
    page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
    await page.goto(`${server.url}/?measure=1`);
    const s = await until("120 frames drawn", async () => {
      const st = await page.evaluate(() => window.framewire.stats());
      return st.frames >= 120 ? st : null;
    }, 60000).catch((e) => {
      throw new Error(`${e.message}; page log: ${logs.join(" | ")}; server: ${server.stderr()}`);
    });
    assert.equal(s.checksumFailures, 0, "checksum failures");
    assert.equal(s.decodeErrors, 0, "decode errors");
    assert.ok(s.frames - s.keyframes > 60, `deltas applied (${s.frames} frames, ${s.keyframes} keyframes)`);
    const shot = await page.evaluate(() => window.framewire.readback());
    const grey = Uint8Array.from(shot.grey);
    assert.equal(grey.length, 640 * 480);
    assert.equal(await checksumOf(grey, 640), shot.checksum, "canvas pixels match the host's checksum");
  });
});

// The browser viewer over WebTransport in real headless Chromium: the page reads the host's
// certificate hash from /api/webtransport, opens a WebTransport session to the QUIC port with
// serverCertificateHashes, declares named bases, gets each frame on a stream of its own, and
// draws exactly the host's picture. Where WebTransport is not served, or fails, it falls back
// to the WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { withServerAndBrowser } from "./harness.mjs";
import { checksumOf, drawn, planesOf } from "./pictures.mjs";

const scroll = ["--source", "synthetic", "--scene", "scroll", "--resolution", "800x600", "--no-daylight"];

test("over WebTransport, in colour: named bases, frames on their own streams, canvas equal to the host's picture", { timeout: 120000 }, async () => {
  await withServerAndBrowser(["--source", "synthetic", "--scene", "mixed", "--resolution", "800x600", "--no-daylight"], async (server, browser) => {
    const info = await (await fetch(`${server.url}/api/webtransport`)).json();
    assert.equal(info.port, server.ports.quic);
    assert.match(info.certificateHash, /^[0-9a-f]{64}$/);
    const { page, s } = await drawn(server, browser, "measure=1", 200, { width: 1000, height: 800 });
    assert.equal(s.transport, "webtransport", `transport (page log: ${page.logs.join(" | ")})`);
    assert.equal(s.namedBases, true, "named bases agreed");
    assert.equal(s.checksumFailures, 0, "checksum failures");
    assert.equal(s.decodeErrors, 0, "decode errors");
    assert.ok(s.frames - s.keyframes > 150, `deltas applied (${s.frames} frames, ${s.keyframes} keyframes)`);
    const shot = await page.evaluate(() => window.framewire.readback());
    assert.deepEqual([shot.width, shot.height, shot.planes], [800, 600, 3]);
    const planes = planesOf(Uint8Array.from(shot.pixels), 800, 600);
    assert.equal(await checksumOf(planes, 800), shot.checksum, "canvas pixels match the host's colour checksum");
    // The host counted the session as a WebTransport one.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /framewire_events_total\{event="connections\.webtransport"\} [1-9]/);
  }, { quic: true });
});

test("a host without a QUIC port: the page uses the WebSocket", { timeout: 120000 }, async () => {
  await withServerAndBrowser(scroll, async (server, browser) => {
    assert.equal((await fetch(`${server.url}/api/webtransport`)).status, 404);
    const { s } = await drawn(server, browser, "grey=1", 100, { width: 1000, height: 800 });
    assert.equal(s.transport, "websocket");
    assert.equal(s.namedBases, false);
    assert.equal(s.checksumFailures, 0, "checksum failures");
  });
});

test("WebTransport that fails (a certificate hash that is not the host's): the page falls back to the WebSocket", { timeout: 120000 }, async () => {
  await withServerAndBrowser(scroll, async (server, browser) => {
    const wrongHash = async (page) => {
      await page.route("**/api/webtransport", async (route) => {
        const real = await (await route.fetch()).json();
        await route.fulfill({ json: { ...real, certificateHash: "00".repeat(32) } });
      });
    };
    const { page, s } = await drawn(server, browser, "grey=1", 100, { width: 1000, height: 800 }, wrongHash);
    assert.equal(s.transport, "websocket");
    assert.equal(s.checksumFailures, 0, "checksum failures");
    assert.ok(page.logs.some((l) => l.includes("WebTransport failed")), `the page said why (${page.logs.join(" | ")})`);
  }, { quic: true });
});

test("the page over HTTPS (as off loopback): a secure context, WebTransport, and the WebSocket fallback over wss", { timeout: 120000 }, async () => {
  await withServerAndBrowser([...scroll, "--https"], async (server, browser) => {
    assert.ok(server.url.startsWith("https://"));
    const { page, s } = await drawn(server, browser, "grey=1", 100, { width: 1000, height: 800 });
    assert.deepEqual(await page.evaluate(() => [location.protocol, isSecureContext]), ["https:", true]);
    assert.equal(s.transport, "webtransport");
    assert.equal(s.checksumFailures, 0, "checksum failures");
    const ws = await drawn(server, browser, "grey=1&transport=websocket", 60, { width: 1000, height: 800 });
    assert.equal(ws.s.transport, "websocket");
    assert.equal(ws.s.checksumFailures, 0, "checksum failures over wss");
    // Plain HTTP to the HTTPS port gets no page.
    await assert.rejects(fetch(server.url.replace("https:", "http:")));
  }, { quic: true });
});

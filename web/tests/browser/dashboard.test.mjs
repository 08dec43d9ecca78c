// The dashboard in headless Chromium: a device sends thermal frames on the sensor port, and the
// heatmap's pixel colours follow the values sent — every cell is checked against the colour
// scale documented in spec/PROTOCOL.md, implemented again here from its stops — and it
// updates live when the next frame arrives.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { withServerAndBrowser, until } from "./harness.mjs";

// spec/PROTOCOL.md, "Dashboard": stops of the colour scale (t, r, g, b).
const STOPS = [
  [0.0, 0, 0, 4],
  [0.25, 87, 16, 110],
  [0.5, 188, 55, 84],
  [0.75, 249, 142, 9],
  [1.0, 252, 255, 164],
];
function expected(t) {
  let i = 1;
  while (i < STOPS.length - 1 && t > STOPS[i][0]) i++;
  const [a, b] = [STOPS[i - 1], STOPS[i]];
  const f = (t - a[0]) / (b[0] - a[0]);
  return [1, 2, 3].map((k) => a[k] + (b[k] - a[k]) * f);
}

function thermalLine(values) {
  // The 3072-hex-character form: 4 hex digits per value, row-major.
  return `#frame:${values.map((v) => v.toString(16).padStart(4, "0")).join("")}!\n`;
}

async function cellColours(page, w, h) {
  return page.evaluate(([w, h]) => {
    const c = document.getElementById("heatmap");
    const cell = c.width / w;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const out = [];
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        const i = ((Math.floor(y * cell + cell / 2) * c.width) + Math.floor(x * cell + cell / 2)) * 4;
        out.push([d[i], d[i + 1], d[i + 2]]);
      }
    return out;
  }, [w, h]);
}

function check(colours, values) {
  const min = Math.min(...values);
  const max = Math.max(...values);
  let worst = 0;
  values.forEach((v, i) => {
    const want = expected((v - min) / (max - min));
    const got = colours[i];
    for (let k = 0; k < 3; k++) worst = Math.max(worst, Math.abs(got[k] - want[k]));
  });
  return worst;
}

test("the dashboard's heatmap shows the thermal values sent, and follows the next frame", { timeout: 120000 }, async () => {
  await withServerAndBrowser(["--source", "synthetic", "--scene", "idle", "--resolution", "cozy", "--no-daylight"], async (server, browser) => {
    const dev = connect(server.ports.sensor, "127.0.0.1");
    await new Promise((r) => dev.once("connect", r));
    dev.write("#serialno:CAM1!\n#locid:lab!\n");
    // A diagonal gradient with a hot spot: cold corner 1000, hot spot 9000.
    const first = [];
    for (let y = 0; y < 24; y++) for (let x = 0; x < 32; x++) first.push(1000 + x * 60 + y * 40);
    first[12 * 32 + 20] = 9000;
    dev.write(thermalLine(first));

    const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
    const logs = [];
    page.on("pageerror", (e) => logs.push(e.message));
    await page.goto(`${server.url}/dashboard?location=lab`);
    await until("the first grid on the heatmap", async () => (await page.evaluate(() => window.dashboard())).seq >= 0, 20000).catch((e) => {
      throw new Error(`${e.message}; page errors: ${logs.join(" | ")}`);
    });
    const c1 = await cellColours(page, 32, 24);
    assert.ok(check(c1, first) <= 1.5, `cell colours follow the first grid (max channel error ${check(c1, first)})`);
    // The hot spot is the scale's hot end; the cold corner its cold end.
    assert.deepEqual(c1[12 * 32 + 20], [252, 255, 164]);
    assert.deepEqual(c1[0], [0, 0, 4]);
    assert.equal(await page.textContent("#legend-max"), "9000");

    // The next frame, reversed: the picture must change to match it.
    const second = first.map((v) => 10000 - v);
    dev.write(thermalLine(second));
    await until("the second grid", async () => (await page.evaluate(() => window.dashboard())).seq >= 1, 20000);
    const c2 = await cellColours(page, 32, 24);
    assert.ok(check(c2, second) <= 1.5, `cell colours follow the second grid (max channel error ${check(c2, second)})`);
    assert.deepEqual(c2[12 * 32 + 20], [0, 0, 4]);

    // The charts poll /api/stats: the summary shows the device and the grids.
    await until("the summary", async () => /devices 1/.test(await page.textContent("#summary")), 10000);
    dev.destroy();
  });
});

// Input from the page reaches a real X server: headless Chromium shows an Xvfb screen captured
// by framewire, the test moves and clicks the mouse on the page's canvas, and an independent X
// client (xprobe.py, python-xlib) reports where the X pointer went and which clicks its window
// received. A page without the control token moves nothing, and the refusal is counted.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startServer, launch, until, root } from "./harness.mjs";

const W = 800;
const H = 600;
const TOKEN = "browser-input-token";

/** A private Xvfb (it picks its own display number); null when Xvfb is not installed. */
async function startXvfb() {
  const proc = spawn("Xvfb", ["-displayfd", "1", "-screen", "0", `${W}x${H}x24`, "-noreset", "-nolisten", "tcp"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const failed = new Promise((r) => proc.once("error", () => r(null)));
  const line = new Promise((r) => createInterface({ input: proc.stdout }).once("line", r));
  const n = await Promise.race([line, failed]);
  if (n === null) return null;
  return { display: `:${n.trim()}`, stop: () => proc.kill("SIGKILL") };
}

/** The X probe: its stdout lines, queued, and a way to ask for the pointer. */
async function startProbe(display) {
  const python = join(root, ".venv/bin/python");
  const proc = spawn(python, [new URL("./xprobe.py", import.meta.url).pathname, display], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines = [];
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  createInterface({ input: proc.stdout }).on("line", (l) => lines.push(l));
  await until("the X probe's window", () => lines.includes("ready"), 10000, 20).catch((e) => {
    throw new Error(`${e.message}: ${stderr}`);
  });
  return {
    lines,
    async pointer() {
      const before = lines.length;
      proc.stdin.write("pointer\n");
      const l = await until("the probe's pointer answer", () => lines.slice(before).find((x) => x.startsWith("pointer ")), 5000, 10);
      lines.splice(lines.indexOf(l), 1);
      const [, x, y] = l.split(" ").map(Number);
      return [x, y];
    },
    stop: () => proc.kill("SIGKILL"),
  };
}

/** Page coordinates of screen pixel (x, y), from where the canvas is laid out. */
async function pageXY(page, x, y) {
  return page.evaluate(
    ([x, y]) => {
      const c = document.getElementById("screen");
      const r = c.getBoundingClientRect();
      const scale = Math.min(r.width / c.width, r.height / c.height);
      const left = r.left + (r.width - c.width * scale) / 2;
      const top = r.top + (r.height - c.height * scale) / 2;
      return [left + (x + 0.5) * scale, top + (y + 0.5) * scale];
    },
    [x, y],
  );
}

async function openViewer(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  await page.goto(url);
  await until("the X screen on the page", async () => {
    const s = await page.evaluate(() => window.framewire.stats());
    return s.frames > 0 && s.width === W && s.height === H;
  });
  return page;
}

async function refusedCount(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = text.match(/framewire_events_total\{event="input_refused\.no_control_token"\} (\d+)/);
  return m ? Number(m[1]) : 0;
}

test("mouse moves and clicks on the page move the X pointer and click an X window", { timeout: 120000 }, async (t) => {
  if (!existsSync(join(root, ".venv/bin/python"))) throw new Error(".venv is missing: run `make setup`");
  const x = await startXvfb();
  if (!x) {
    t.skip("Xvfb is not installed (make setup installs it)");
    return;
  }
  let probe, server, browser;
  try {
    probe = await startProbe(x.display);
    server = await startServer(["--source", `x11${x.display}`, "--no-daylight", "--no-touch", "--control-token", TOKEN, "--no-cursor"]);
    browser = await launch();

    // Without the control token: the page views, but its input is refused and counted.
    const viewOnly = await openViewer(browser, `${server.url}/`);
    const start = await probe.pointer();
    const [vx, vy] = await pageXY(viewOnly, 40, 30);
    await viewOnly.mouse.move(vx, vy);
    await viewOnly.mouse.down();
    await viewOnly.mouse.up();
    await until("the refusal counted", async () => (await refusedCount(server)) >= 2);
    assert.deepEqual(await probe.pointer(), start, "a page without the control token moved the X pointer");
    assert.ok(!probe.lines.some((l) => l.startsWith("press")), "a page without the control token clicked");
    await viewOnly.close();

    // With the token: moves go to the X pointer, clicks land on the window at the same spot.
    const page = await openViewer(browser, `${server.url}/?token=${TOKEN}`);
    for (const [sx, sy] of [[200, 150], [613, 427], [5, 590]]) {
      const [px, py] = await pageXY(page, sx, sy);
      await page.mouse.move(px, py, { steps: 3 });
      await until(`the X pointer at ${sx},${sy}`, async () => {
        const [ax, ay] = await probe.pointer();
        return ax === sx && ay === sy;
      }, 10000);
    }
    const [cx, cy] = await pageXY(page, 321, 123);
    await page.mouse.click(cx, cy);
    await until("the press and release on the X window", () => probe.lines.includes("press 321 123 1") && probe.lines.includes("release 321 123 1"), 10000);
    await page.mouse.click(cx, cy, { button: "right" });
    await until("a right-button press", () => probe.lines.includes("press 321 123 3"), 10000);
    assert.deepEqual(await probe.pointer(), [321, 123]);
  } catch (e) {
    throw new Error(`${e.message}; probe: ${probe?.lines.join(" | ")}; server: ${server?.stderr()}`);
  } finally {
    await browser?.close();
    await server?.stop();
    probe?.stop();
    x.stop();
  }
});

// The browser viewer across an emulated network: headless Chromium in one network namespace,
// `framewire serve` in the other (`framewire bench link`: the seeded user-space relay for
// delay and loss), the page over WebTransport beside the same page over its WebSocket, cell by
// cell in one run. Per cell: exact frames drawn per second (every one verified by its
// checksum), the host's capture → applied p50/p99 (clock-offset corrected, from the page's
// ACKs), and what the page counted (checksum failures, missing bases, frames overtaken).
// Needs root (namespaces). Run from web/: `node bench/browser-net.mjs [--seconds 6] [--json]`.
import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, rmSync, writeFileSync, chmodSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bin, launch, chromiumPath, until } from "../tests/browser/harness.mjs";

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const seconds = Number(opt("seconds", "6"));
const contents = opt("contents", "typing,scroll").split(",");
const cells = opt("cells", "20/0,20/1,20/5,80/1").split(",").map((c) => c.split("/").map(Number));
const transports = ["webtransport", "websocket"];
const TOKEN = "browser-net-token";

async function holdLink(rtt, loss, seed) {
  const p = spawn(bin, ["bench", "link", "--rtt-ms", String(rtt), "--loss-pct", String(loss), "--seed", String(seed)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: p.stdout }).once("line", resolve);
    p.once("exit", (code) => reject(new Error(`framewire bench link exited (${code})`)));
  });
  return { ...JSON.parse(line), stop: () => new Promise((r) => (p.once("exit", r), p.stdin.end())) };
}

async function startServer(link, scene, dir) {
  const sock = join(dir, "ctl.sock");
  const args = ["netns", "exec", link.ns_a, bin, "serve", "--source", "synthetic", "--scene", scene,
    "--resolution", "balanced", "--bind", link.addr_a, "--token", TOKEN, "--quic-port", "7979",
    "--http-port", "8890", "--port", "7878", "--no-daylight", "--no-sensors", "--control-socket", sock];
  const p = spawn("ip", args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, FRAMEWIRE_CONFIG_DIR: join(dir, "config") } });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  const latency = () => JSON.parse(execFileSync(bin, ["latency", "--json", "--control-socket", sock], { encoding: "utf8" }));
  await until("the server's control socket", () => existsSync(sock), 20000);
  return { latency, stderr: () => err, stop: () => new Promise((r) => (p.once("exit", r), p.kill("SIGTERM"))) };
}

async function measure(page, server) {
  const stats = () => page.evaluate(() => window.framewire.stats());
  await until("30 frames drawn", async () => (await stats()).frames >= 30, 30000);
  await new Promise((r) => setTimeout(r, 2000));
  const a = await stats();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const b = await stats();
  const e2e = server.latency().end_to_end;
  return {
    transport: b.transport,
    fps_exact: (b.frames - a.frames) / seconds,
    e2e_p50_ms: e2e.p50,
    e2e_p99_ms: e2e.p99,
    checksum_failures: b.checksumFailures,
    bases_missing: b.basesMissing,
    stale_frames: b.staleFrames,
    reconnects: b.reconnects,
    mb: (b.bytes - a.bytes) / 1e6,
  };
}

const rows = [];
let seed = 1;
const real = chromiumPath();
for (const content of contents) {
  for (const [rtt, loss] of cells) {
    for (const transport of transports) {
      const dir = mkdtempSync(join(tmpdir(), "fw-browser-net-"));
      const link = await holdLink(rtt, loss, seed);
      // Chromium runs inside the viewer's namespace, through a wrapper playwright starts.
      const wrapper = join(dir, "chromium");
      writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${link.ns_b} ${real} "$@"\n`);
      chmodSync(wrapper, 0o755);
      process.env.CHROMIUM = wrapper;
      let server, browser;
      try {
        server = await startServer(link, content, dir);
        browser = await launch({ quic: true });
        const page = await browser.newPage({ ignoreHTTPSErrors: true });
        const q = `token=${TOKEN}&grey=1${transport === "websocket" ? "&transport=websocket" : ""}`;
        await page.goto(`https://${link.addr_a}:8890/?${q}`);
        const r = await measure(page, server);
        if (r.transport !== transport) throw new Error(`the page used ${r.transport}, not ${transport}`);
        rows.push({ content, rtt_ms: rtt, loss_pct: loss, ...r });
        console.error(JSON.stringify(rows.at(-1)));
      } catch (e) {
        console.error(`${content} ${rtt} ms ${loss} % ${transport}: ${e.message}\n${server?.stderr() ?? ""}`);
        rows.push({ content, rtt_ms: rtt, loss_pct: loss, transport, error: e.message });
      } finally {
        await browser?.close();
        await server?.stop();
        await link.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    seed++;
  }
}

if (argv.includes("--json")) console.log(JSON.stringify(rows, null, 2));
else {
  const f = (x, d = 1) => (x === undefined ? "—" : x.toFixed(d));
  console.log(`browser viewer across an emulated link (Chromium ${execFileSync(real, ["--version"], { encoding: "utf8" }).trim()}, 1280×960 grey, ${seconds} s a cell)`);
  console.log("| content | RTT | loss | transport | exact fps | p50 ms | p99 ms | checksum failures | missing bases | overtaken | MB |");
  console.log("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    if (r.error) console.log(`| ${r.content} | ${r.rtt_ms} ms | ${r.loss_pct} % | ${r.transport} | error: ${r.error} |`);
    else console.log(`| ${r.content} | ${r.rtt_ms} ms | ${r.loss_pct} % | ${r.transport} | ${f(r.fps_exact)} | ${f(r.e2e_p50_ms)} | ${f(r.e2e_p99_ms)} | ${r.checksum_failures} | ${r.bases_missing} | ${r.stale_frames} | ${f(r.mb, 2)} |`);
  }
}

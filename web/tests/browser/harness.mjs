// Shared by the browser tests: a framewire server on free loopback ports, and headless Debian
// Chromium driven by playwright-core (no browser download; see scripts/setup.sh).
import { spawn } from "node:child_process";
import { createServer, connect } from "node:net";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const root = new URL("../../../", import.meta.url).pathname;
export const bin = process.env.FRAMEWIRE_BIN ?? join(root, "target/release/framewire");

/** `n` different free loopback ports. All are held until every one is picked: a port closed
 * as soon as it was picked can be handed out again at once (a server once got the same port
 * for two of its listeners and failed to start). */
export async function freePorts(n) {
  const held = [];
  try {
    for (let i = 0; i < n; i++) {
      held.push(
        await new Promise((resolve, reject) => {
          const s = createServer();
          s.once("error", reject);
          s.listen(0, "127.0.0.1", () => resolve(s));
        }),
      );
    }
    return held.map((s) => s.address().port);
  } finally {
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(() => resolve()))));
  }
}

async function waitForPort(port, ms) {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((res) => {
      const c = connect(port, "127.0.0.1", () => (c.end(), res(true)));
      c.once("error", () => res(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listening on ${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts `framewire <args>` with every port free and private; resolves when HTTP answers. */
export async function startServer(args, { command = "serve", env = {}, quic = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "fw-browser-"));
  const [v1, daylight, sensor, http, quicPort] = await freePorts(5);
  const ports = { v1, daylight, sensor, http };
  if (quic) {
    // WebTransport (and framewire/1 over QUIC) on a UDP port (a TCP port free now, most likely
    // free for UDP too); the certificate is made in the server's private directory.
    ports.quic = quicPort;
    args = [...args, "--quic-port", String(ports.quic)];
    env = { FRAMEWIRE_CONFIG_DIR: join(dir, "config"), ...env };
  }
  const full = [
    command,
    "--port", String(ports.v1),
    "--daylight-port", String(ports.daylight),
    "--sensor-port", String(ports.sensor),
    "--http-port", String(ports.http),
    "--control-socket", join(dir, "ctl.sock"),
    ...args,
  ];
  const proc = spawn(bin, full, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => proc.once("exit", r));
  await Promise.race([
    waitForPort(ports.http, 20000),
    exited.then((code) => {
      throw new Error(`framewire ${full.join(" ")} exited (${code}): ${stderr}`);
    }),
  ]);
  return {
    ports,
    url: `${args.includes("--https") ? "https" : "http"}://127.0.0.1:${ports.http}`,
    stderr: () => stderr,
    async stop() {
      proc.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      proc.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function chromiumPath() {
  for (const p of [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (p && existsSync(p)) return p;
  throw new Error("Chromium not found: scripts/setup.sh installs Debian's chromium package");
}

/**
 * Headless Chromium with WebGL on SwiftShader (no GPU here) and no background traffic. QUIC is
 * off unless `quic` (WebTransport needs it; the WebSocket tests keep HTTP/1 only).
 */
export async function launch({ quic = false } = {}) {
  // Playwright gives the browser a new empty profile directory of its own.
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      "--no-sandbox",
      "--use-angle=swiftshader",
      "--enable-unsafe-swiftshader",
      "--ignore-gpu-blocklist",
      ...(quic ? [] : ["--disable-quic"]),
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return browser;
}

/** Runs `fn(server, browser)` with both started, and always stops both. */
export async function withServerAndBrowser(args, fn, opts = {}) {
  const server = await startServer(args, opts);
  let browser;
  try {
    browser = await launch({ quic: opts.quic ?? false });
    return await fn(server, browser);
  } finally {
    await browser?.close();
    await server.stop();
  }
}

export async function until(what, fn, ms = 20000, every = 100) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

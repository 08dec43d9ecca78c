// The browser viewer on a recording of a real program: `framewire serve --source file:PATH`
// (replayed at its recorded pace, again from the start when it ends) and the page in headless
// Chromium, in colour unless `--grey`. Prints the page's own times per frame (decode and
// apply, then draw with WebGL on SwiftShader), with every frame's checksum verified. The page
// is the one the binary embeds, so two binaries compare two pages: run this once per binary,
// in turn (`FRAMEWIRE_BIN=... node bench/browser-replay.mjs --input ../corpus/browser-scroll.fwrec`).
// Run from web/ after `make build` (and `make corpus` for the recordings). The page keeps the
// times of its last 300 frames: ask for more than 300 so that the first keyframe is not among
// them.
import { resolve } from "node:path";
import { withServerAndBrowser } from "../tests/browser/harness.mjs";
import { drawn } from "../tests/browser/pictures.mjs";

const argv = process.argv.slice(2);
const usage = "usage: node bench/browser-replay.mjs --input RECORDING.fwrec [--frames 400] [--grey] [--json]";
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = argv[i + 1];
  if (v === undefined || v.startsWith("--")) {
    console.error(`--${name} needs a value\n${usage}`);
    process.exit(2);
  }
  return v;
};
const input = opt("input", null);
if (!input) {
  console.error(usage);
  process.exit(2);
}
const frames = Number(opt("frames", "400"));
if (!Number.isInteger(frames) || frames < 1) {
  console.error(`--frames: a whole number of frames, not ${opt("frames")}\n${usage}`);
  process.exit(2);
}
const grey = argv.includes("--grey");

const pct = (v, q) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))] : NaN;
};

await withServerAndBrowser(["--source", `file:${resolve(input)}`, "--no-daylight", "--no-touch"], async (server, browser) => {
  const { s } = await drawn(server, browser, grey ? "measure=1&grey=1" : "measure=1", frames, { width: 1280, height: 960 });
  if (s.checksumFailures > 0 || s.decodeErrors > 0) {
    throw new Error(`${s.checksumFailures} checksum failures, ${s.decodeErrors} decode errors`);
  }
  const r = {
    input,
    colour: !grey,
    frames: s.frames,
    decode_apply_ms_p50: pct(s.decodeMs, 0.5),
    decode_apply_ms_p95: pct(s.decodeMs, 0.95),
    draw_ms_p50: pct(s.drawMs, 0.5),
    total_ms_p50: pct(s.totalMs, 0.5),
    total_ms_p95: pct(s.totalMs, 0.95),
    samples: s.totalMs.length,
  };
  if (argv.includes("--json")) console.log(JSON.stringify(r));
  else {
    const f = (v) => v.toFixed(2);
    console.log(
      `${input} (${grey ? "grey" : "colour"}), ${r.frames} frames, ${r.samples} timed: decode+apply p50 ${f(r.decode_apply_ms_p50)} ms, ` +
        `p95 ${f(r.decode_apply_ms_p95)} ms; draw p50 ${f(r.draw_ms_p50)} ms; decode+apply+draw p50 ${f(r.total_ms_p50)} ms, p95 ${f(r.total_ms_p95)} ms`,
    );
  }
});

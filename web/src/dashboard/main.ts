// The live dashboard: charts from /api/stats once a second (rates from successive totals), and
// a heatmap of the newest thermal grid of the chosen location, from a v1 subscriber on /ws.

import * as v1 from "../common/v1";
import { Chart } from "./chart";
import { Heatmap } from "./heatmap";

const params = new URLSearchParams(location.search);
const token = params.get("token") ?? "";
const fixedMin = params.get("min");
const fixedMax = params.get("max");
const fixed = fixedMin !== null && fixedMax !== null ? { min: Number(fixedMin), max: Number(fixedMax) } : undefined;

const el = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const chart = (id: string, title: string, unit: string, series: Array<[string, string]>): Chart =>
  new Chart(el<HTMLCanvasElement>(id), title, unit, series);

const charts = {
  rate: chart("c-rate", "samples and grids", "per s", [["samples", "#4fc3f7"], ["thermal", "#ffb74d"]]),
  latency: chart("c-latency", "end to end (viewers)", "ms", [["p50", "#81c784"], ["p99", "#e57373"]]),
  queue: chart("c-queue", "hub queue depth", "items", [["depth", "#ba68c8"]]),
  fps: chart("c-fps", "capture", "fps", [["fps", "#4db6ac"]]),
  rtt: chart("c-rtt", "viewer round trip", "ms", [["p50", "#81c784"], ["p95", "#fff176"]]),
};

interface Stage {
  p50: number;
  p95: number;
  p99: number;
}
interface Stats {
  uptime_s: number;
  report: { fps: number; clients: number; rtt: Stage; end_to_end: Stage; source: string };
  hub: null | {
    queue_depth: number;
    reads_paused: boolean;
    samples_published: number;
    samples_missed: number;
    thermal_published: number;
    devices: number;
    streams: Array<{ name: string; items: number }>;
  };
}

let previous: { t: number; samples: number; thermal: number } | null = null;
const select = el<HTMLSelectElement>("location");
const summary = el<HTMLElement>("summary");

async function poll(): Promise<void> {
  let s: Stats;
  try {
    // A server with a token needs it for its figures too.
    const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
    const r = await fetch("/api/stats", { cache: "no-store", headers });
    if (r.status === 401) {
      summary.textContent = "this server needs its token: open /dashboard?token=TOKEN";
      return;
    }
    s = (await r.json()) as Stats;
  } catch {
    summary.textContent = "server not reachable; retrying";
    return;
  }
  const hub = s.hub;
  const now = performance.now() / 1000;
  let sampleRate = 0;
  let thermalRate = 0;
  if (hub && previous) {
    const dt = Math.max(1e-3, now - previous.t);
    sampleRate = (hub.samples_published - previous.samples) / dt;
    thermalRate = (hub.thermal_published - previous.thermal) / dt;
  }
  if (hub) previous = { t: now, samples: hub.samples_published, thermal: hub.thermal_published };
  charts.rate.push([sampleRate, thermalRate]);
  charts.latency.push([s.report.end_to_end.p50, s.report.end_to_end.p99]);
  charts.queue.push([hub?.queue_depth ?? 0]);
  charts.fps.push([s.report.fps]);
  charts.rtt.push([s.report.rtt.p50, s.report.rtt.p95]);
  summary.textContent =
    `source ${s.report.source} · viewers ${s.report.clients} · ` +
    (hub
      ? `devices ${hub.devices} · samples ${hub.samples_published} (missed ${hub.samples_missed}) · grids ${hub.thermal_published}` +
        (hub.reads_paused ? " · READS PAUSED (hub behind)" : "")
      : "no sensor listener") +
    ` · up ${s.uptime_s.toFixed(0)} s`;
  if (hub) {
    for (const st of hub.streams) {
      if (!st.name.startsWith("thermal/") || [...select.options].some((o) => o.value === st.name)) continue;
      select.add(new Option(st.name.slice("thermal/".length), st.name));
    }
  }
}

const heatmap = new Heatmap(el<HTMLCanvasElement>("heatmap"), el<HTMLCanvasElement>("legend"), { min: el("legend-min"), max: el("legend-max") }, fixed);
const latest = new Map<string, { width: number; height: number; values: Uint16Array; seq: number }>();
let drawn = { stream: "", seq: -1 };
let gridsDrawn = 0;

function drawSelected(): void {
  requestAnimationFrame(drawSelected);
  const name = select.value;
  const g = latest.get(name);
  if (!g || (drawn.stream === name && drawn.seq === g.seq)) return;
  heatmap.draw(g.width, g.height, g.values);
  drawn = { stream: name, seq: g.seq };
  gridsDrawn++;
  el("heatmap-caption").textContent = `${name} · ${g.width}×${g.height} · grid ${g.seq}`;
}

function subscribe(): void {
  const dec = new v1.Decoder();
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => ws.send(v1.hello(v1.Role.Subscriber, 0, "thermal/", token));
  ws.onmessage = (ev: MessageEvent<ArrayBuffer>) => {
    try {
      dec.push(new Uint8Array(ev.data));
      for (let p = dec.next(); p !== null; p = dec.next()) {
        if (p.type === v1.T.Thermal) {
          latest.set(p.stream, { width: p.width, height: p.height, values: p.values, seq: p.deviceSeq });
          if (select.value === "" || ![...select.options].some((o) => o.value === p.stream)) {
            if (![...select.options].some((o) => o.value === p.stream)) select.add(new Option(p.stream.slice("thermal/".length), p.stream));
            if (select.value === "") select.value = p.stream;
          }
        } else if (p.type === v1.T.Goodbye) {
          el("heatmap-caption").textContent = `no thermal streams: ${p.reason}`;
        }
      }
    } catch (e) {
      console.error("framewire dashboard: protocol error", e);
      ws.close();
    }
  };
  ws.onclose = () => setTimeout(subscribe, 1000);
}

const wanted = params.get("location");
if (wanted) select.add(new Option(wanted, `thermal/${wanted}`, true, true));

/** What tests read: which grid is on screen, and its cell size. */
declare global {
  interface Window {
    dashboard: () => { stream: string; seq: number; gridsDrawn: number; cell: number };
  }
}
window.dashboard = () => ({ stream: drawn.stream, seq: drawn.seq, gridsDrawn, cell: heatmap.cellSize(latest.get(drawn.stream)?.width ?? 32) });

void poll();
setInterval(() => void poll(), 1000);
subscribe();
requestAnimationFrame(drawSelected);

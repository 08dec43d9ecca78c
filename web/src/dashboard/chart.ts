// A small live line chart on a canvas: a fixed number of recent points per series, autoscaled.

export interface Series {
  name: string;
  colour: string;
  points: number[];
}

export class Chart {
  readonly series: Series[];
  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly title: string,
    private readonly unit: string,
    series: Array<[string, string]>,
    private readonly capacity = 120,
  ) {
    this.series = series.map(([name, colour]) => ({ name, colour, points: [] }));
  }

  push(values: number[]): void {
    this.series.forEach((s, i) => {
      s.points.push(values[i] ?? 0);
      if (s.points.length > this.capacity) s.points.shift();
    });
    this.draw();
  }

  private draw(): void {
    const c = this.canvas;
    const ctx = c.getContext("2d");
    if (!ctx) return;
    const w = c.width;
    const h = c.height;
    ctx.fillStyle = "#161a20";
    ctx.fillRect(0, 0, w, h);
    const all = this.series.flatMap((s) => s.points);
    const max = Math.max(1e-9, ...all) * 1.1;
    const top = 22;
    const plotH = h - top - 6;
    ctx.strokeStyle = "#2a313b";
    ctx.beginPath();
    for (let k = 0; k <= 4; k++) {
      const y = top + (plotH * k) / 4;
      ctx.moveTo(0, y);
      ctx.lineTo(w, y);
    }
    ctx.stroke();
    for (const s of this.series) {
      ctx.strokeStyle = s.colour;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      s.points.forEach((v, i) => {
        const x = (i / (this.capacity - 1)) * w;
        const y = top + plotH - (v / max) * plotH;
        if (i === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      ctx.stroke();
    }
    ctx.font = "12px sans-serif";
    ctx.fillStyle = "#cdd6e0";
    ctx.fillText(`${this.title} (${this.unit}, max ${fmt(max / 1.1)})`, 6, 15);
    let x = w - 6;
    for (const s of [...this.series].reverse()) {
      const label = `${s.name} ${fmt(s.points[s.points.length - 1] ?? 0)}`;
      const tw = ctx.measureText(label).width;
      x -= tw;
      ctx.fillStyle = s.colour;
      ctx.fillText(label, x, 15);
      x -= 12;
    }
  }
}

export function fmt(v: number): string {
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)}M`;
  if (v >= 1e4) return `${(v / 1e3).toFixed(1)}k`;
  if (v >= 100) return v.toFixed(0);
  return v.toFixed(2);
}

// Draws a thermal grid: one square per value, coloured along the scale of colormap.ts over the
// grid's range (or a fixed one), and the scale itself as a legend with its end values.

import { colour, range } from "../common/colormap";

export class Heatmap {
  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly legend: HTMLCanvasElement,
    private readonly labels: { min: HTMLElement; max: HTMLElement },
    private readonly fixed?: { min: number; max: number },
  ) {
    this.drawLegend();
  }

  /** The pixel size of one cell for a grid of this width. */
  cellSize(width: number): number {
    return Math.max(1, Math.floor(640 / Math.max(1, width)));
  }

  draw(width: number, height: number, values: Uint16Array): void {
    const cell = this.cellSize(width);
    const c = this.canvas;
    if (c.width !== width * cell || c.height !== height * cell) {
      c.width = width * cell;
      c.height = height * cell;
    }
    const ctx = c.getContext("2d");
    if (!ctx) return;
    const { min, max } = range(values, this.fixed);
    const img = ctx.createImageData(width, height);
    for (let i = 0; i < values.length; i++) {
      const [r, g, b] = colour((values[i]! - min) / (max - min));
      img.data[i * 4] = r;
      img.data[i * 4 + 1] = g;
      img.data[i * 4 + 2] = b;
      img.data[i * 4 + 3] = 255;
    }
    // One pixel per value, scaled up without smoothing: each cell is a flat square.
    const small = new OffscreenCanvas(width, height);
    small.getContext("2d")!.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(small, 0, 0, c.width, c.height);
    this.labels.min.textContent = String(min);
    this.labels.max.textContent = String(max);
  }

  private drawLegend(): void {
    const l = this.legend;
    const ctx = l.getContext("2d");
    if (!ctx) return;
    for (let x = 0; x < l.width; x++) {
      const [r, g, b] = colour(x / (l.width - 1));
      ctx.fillStyle = `rgb(${r},${g},${b})`;
      ctx.fillRect(x, 0, 1, l.height);
    }
  }
}

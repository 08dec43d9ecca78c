// The heatmap's colour scale: linear interpolation in RGB between five stops, dark purple
// (cold) through red and orange to pale yellow (hot), close to the "inferno" scale. Documented
// in spec/PROTOCOL.md ("Dashboard") so tests can check the colours independently.

export const STOPS: ReadonlyArray<readonly [number, number, number, number]> = [
  [0.0, 0, 0, 4],
  [0.25, 87, 16, 110],
  [0.5, 188, 55, 84],
  [0.75, 249, 142, 9],
  [1.0, 252, 255, 164],
];

/** The colour of t in 0..1 (clamped) as [r, g, b]. */
export function colour(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  for (let i = 1; i < STOPS.length; i++) {
    const b = STOPS[i]!;
    if (x <= b[0]) {
      const a = STOPS[i - 1]!;
      const f = (x - a[0]) / (b[0] - a[0]);
      return [
        Math.round(a[1] + (b[1] - a[1]) * f),
        Math.round(a[2] + (b[2] - a[2]) * f),
        Math.round(a[3] + (b[3] - a[3]) * f),
      ];
    }
  }
  const last = STOPS[STOPS.length - 1]!;
  return [last[1], last[2], last[3]];
}

/** The range a grid is drawn over: fixed when given, else the grid's own min and max. */
export function range(values: Uint16Array, fixed?: { min: number; max: number }): { min: number; max: number } {
  if (fixed) return fixed;
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (!Number.isFinite(min)) return { min: 0, max: 1 };
  return { min, max: max > min ? max : min + 1 };
}

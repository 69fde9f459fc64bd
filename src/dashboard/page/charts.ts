/**
 * One capacity chart per region (uPlot): actual ingress, the forecast that stood for each second
 * (P50 and its P10–P90 band) kept under the actual and continued into the future, the
 * limiter's capacity and the planner's ceiling, all in records/s on one time axis, and the
 * planner's desired brokers as a step line on its own axis.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export const FIELDS = ['ingress', 'p50', 'p10', 'p90', 'capacity', 'ceiling', 'brokers'] as const;
export type Field = (typeof FIELDS)[number];

/** A region's points, times in ms. */
export interface RegionSeries {
  t: number[];
  cols: Record<Field, (number | null)[]>;
}

export function emptySeries(): RegionSeries {
  return { t: [], cols: { ingress: [], p50: [], p10: [], p90: [], capacity: [], ceiling: [], brokers: [] } };
}

/** Drops points older than `fromMs` (the series stay bounded by the range). */
export function trim(s: RegionSeries, fromMs: number): void {
  let i = 0;
  while (i < s.t.length && s.t[i]! < fromMs) i++;
  if (i === 0) return;
  s.t.splice(0, i);
  for (const f of FIELDS) s.cols[f].splice(0, i);
}

export class CapacityChart {
  readonly plot: uPlot;

  constructor(
    readonly region: string,
    host: HTMLElement,
    width: number,
  ) {
    const opts: uPlot.Options = {
      width,
      height: 220,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, n: { auto: true } },
      axes: [
        { stroke: '#999', grid: { stroke: '#2a2f3a' } },
        { stroke: '#999', grid: { stroke: '#2a2f3a' }, size: 60, values: (_u, v) => v.map((x) => (x >= 1000 ? `${x / 1000}k` : String(x))), label: 'records/s' },
        { side: 1, scale: 'n', stroke: '#b48ead', grid: { show: false }, size: 40, label: 'brokers' },
      ],
      series: [
        {},
        { label: 'ingress', stroke: '#88c0d0', width: 2 },
        { label: 'forecast P50', stroke: '#ebcb8b', width: 1, dash: [6, 4] },
        { label: 'P10', stroke: 'rgba(235,203,139,0.6)', width: 1 },
        { label: 'P90', stroke: 'rgba(235,203,139,0.6)', width: 1 },
        { label: 'capacity', stroke: '#a3be8c', width: 1.5 },
        { label: 'ceiling', stroke: '#d08770', width: 1, dash: [2, 3] },
        { label: 'desired brokers', stroke: '#b48ead', width: 1, scale: 'n', paths: uPlot.paths.stepped!({ align: 1 }) },
      ],
      // The P10–P90 band: filled from the P90 (series 4) down to the P10 (series 3).
      bands: [{ series: [4, 3], fill: 'rgba(235,203,139,0.15)' }],
    };
    this.plot = new uPlot(opts, [[], [], [], [], [], [], [], []], host);
  }

  /** Draws `s` and, after its last point, the forecast ahead. */
  draw(s: RegionSeries, ahead: readonly { t: number; p50: number; p10: number; p90: number }[]): void {
    const last = s.t.at(-1) ?? 0;
    const future = ahead.filter((f) => f.t > last);
    const x = [...s.t, ...future.map((f) => f.t)].map((t) => t / 1000);
    const pad = <T>(col: T[], v: (f: { p50: number; p10: number; p90: number }) => T | null) => [...col, ...future.map(v)];
    const data: uPlot.AlignedData = [
      x,
      pad(s.cols.ingress, () => null),
      pad(s.cols.p50, (f) => f.p50),
      pad(s.cols.p10, (f) => f.p10),
      pad(s.cols.p90, (f) => f.p90),
      pad(s.cols.capacity, () => null),
      pad(s.cols.ceiling, () => null),
      pad(s.cols.brokers, () => null),
    ];
    this.plot.setData(data);
  }

  resize(width: number): void {
    this.plot.setSize({ width, height: 220 });
  }

  destroy(): void {
    this.plot.destroy();
  }
}

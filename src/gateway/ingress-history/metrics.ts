/** The ingress history's Prometheus series, read from the history and recorder at scrape time. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { IngressHistory } from './history.ts';
import type { IngressRecorder } from './recorder.ts';

/** Registers `edgeq_ingress_history_steps` and `edgeq_ingress_history_dropped_total` in `registry`. */
export function registerIngressHistoryMetrics(registry: Registry, o: { history: IngressHistory; recorder: IngressRecorder }): void {
  const registers = [registry];
  new Gauge({
    name: 'edgeq_ingress_history_steps',
    help: "Closed steps of the region's ingress history held (what the planner reads).",
    registers,
    collect() {
      this.set(o.history.size());
    },
  });
  new Counter({
    name: 'edgeq_ingress_history_dropped_total',
    help: "This gateway's ingress steps dropped unwritten: the cell did not take them and the pending buffer was full.",
    registers,
    collect() {
      this.reset();
      this.inc(o.recorder.dropped());
    },
  });
}

/**
 * The Prometheus figures of TLS endpoints: certificate reloads by outcome, and when the
 * certificate in force expires (the alert an operator wants before a handshake fails). Read from
 * each material's own counters at scrape time, so a material needs no registry of its own.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { TlsMaterial } from './tls-material.ts';

/** Registers `edgeq_tls_reloads_total{listener,outcome}` and `edgeq_tls_certificate_expiry_seconds{listener}` for `materials` (listener name → material). */
export function registerTlsMetrics(registry: Registry, materials: Readonly<Record<string, TlsMaterial>>): void {
  const entries = Object.entries(materials);
  if (entries.length === 0) return;
  new Counter({
    name: 'edgeq_tls_reloads_total',
    help: 'Certificate reloads by listener and outcome (reloaded; failed: the new files were not usable and the certificate in force stayed).',
    labelNames: ['listener', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [listener, m] of entries) {
        const s = m.stats;
        this.inc({ listener, outcome: 'reloaded' }, s.reloads);
        this.inc({ listener, outcome: 'failed' }, s.failures);
      }
    },
  });
  new Gauge({
    name: 'edgeq_tls_certificate_expiry_seconds',
    help: 'When the certificate a listener presents expires (seconds since the epoch).',
    labelNames: ['listener'],
    registers: [registry],
    collect() {
      for (const [listener, m] of entries) {
        const v = m.stats.validToMs;
        if (Number.isFinite(v)) this.set({ listener }, Math.floor(v / 1000));
      }
    },
  });
}

/**
 * The limiter's Prometheus series, registered in the gateway's registry and read from the limiter
 * at scrape time (nothing on the request path). `tenant` labels are bounded by LIMITER_TENANTS_MAX
 * (and in practice by the API keys file: with auth off every request is `anonymous`); `signal` has
 * the seven signal names.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { AdmissionLimiter } from './limiter.ts';
import { SIGNAL_NAMES } from './signals.ts';

/** Registers the limiter's series in `registry`. */
export function registerLimiterMetrics(registry: Registry, limiter: AdmissionLimiter): void {
  const registers = [registry];
  new Gauge({
    name: 'edgeq_limiter_capacity_records_per_second',
    help: 'Admission capacity the load controller set (records/s); +Inf with the none controller.',
    registers,
    collect() {
      this.set(limiter.view().capacityPerSec ?? Infinity);
    },
  });
  // Counters rebuilt from the limiter's totals at each scrape (a forgotten idle tenant's series go
  // away, which Prometheus reads as a counter reset).
  new Counter<'tenant'>({
    name: 'edgeq_limiter_admitted_total',
    help: 'Records the limiter admitted, by tenant.',
    labelNames: ['tenant'],
    registers,
    collect() {
      this.reset();
      for (const t of limiter.totals()) this.inc({ tenant: t.tenant }, t.admitted);
    },
  });
  new Counter<'tenant'>({
    name: 'edgeq_limiter_throttled_total',
    help: 'Records the limiter refused (503 temporary-reduced-capacity), by tenant.',
    labelNames: ['tenant'],
    registers,
    collect() {
      this.reset();
      for (const t of limiter.totals()) this.inc({ tenant: t.tenant }, t.throttled);
    },
  });
  new Gauge<'signal'>({
    name: 'edgeq_limiter_signal',
    help: 'Each load signal as the limiter read it in its last interval (NaN: the source could not read it).',
    labelNames: ['signal'],
    registers,
    collect() {
      const v = limiter.view();
      for (const s of SIGNAL_NAMES) this.set({ signal: s }, v.signals[s].value ?? NaN);
    },
  });
  new Gauge({
    name: 'edgeq_limiter_pressure',
    help: 'The highest pressure (value / target) of any load signal in the last interval.',
    registers,
    collect() {
      this.set(limiter.view().pressure);
    },
  });
  new Gauge<'signal'>({
    name: 'edgeq_limiter_binding',
    help: '1 for the signal binding the capacity now, else 0 (all 0: none binds).',
    labelNames: ['signal'],
    registers,
    collect() {
      const binding = limiter.view().binding;
      for (const s of SIGNAL_NAMES) this.set({ signal: s }, s === binding ? 1 : 0);
    },
  });
}

/**
 * The exchange's Prometheus metrics, read from the exchange at scrape time. Labels are bounded by
 * what they name: origins and sources are regions (REGIONS_MAX in a deployment), topic/partition
 * pairs are the global topics' partitions.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Exchange } from './exchange.ts';

function split(key: string): { origin: string; topic: string; partition: string } {
  const first = key.indexOf('/');
  const last = key.lastIndexOf('/');
  return { origin: key.slice(0, first), topic: key.slice(first + 1, last), partition: key.slice(last + 1) };
}

export function registerExchangeMetrics(registry: Registry, exchange: Exchange): void {
  const registers = [registry];
  const labelNames = ['origin', 'topic', 'partition'] as const;
  new Counter({
    name: 'edgeq_geo_gap_records_total',
    help: 'Records of an origin that its retention deleted before this region fetched them (reported as gaps, never hidden).',
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const [k, n] of exchange.totals.gapRecords) this.inc(split(k), n);
    },
  });
  new Counter({
    name: 'edgeq_geo_applied_records_total',
    help: 'Records of other regions applied in this region by the exchange.',
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const [k, n] of exchange.totals.appliedRecords) this.inc(split(k), n);
    },
  });
  const perReplicator = (name: string, help: string, read: (s: ReturnType<Exchange['replication']>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of exchange.replication()) this.set({ origin: s.origin, topic: s.topic, partition: String(s.partition) }, read(s));
      },
    });
  perReplicator('edgeq_geo_applied_origin_offset', 'Highest origin offset applied in this region, per origin and partition.', (s) => s.appliedOriginOffset);
  perReplicator('edgeq_geo_lag_records', 'Origin offsets the origin is known to be ahead of what this region applied.', (s) => s.lagRecords);
  perReplicator('edgeq_geo_lag_seconds', 'Origin append to local apply of the newest applied batch; while behind, at least the time since falling behind.', (s) => s.lagMs / 1000);
  perReplicator('edgeq_geo_replicator_stalled', '1 while a replicator is stalled (its source holds more and its cursor has not moved for the stall bound).', (s) => (s.stalled ? 1 : 0));
  new Counter({
    name: 'edgeq_geo_stalls_total',
    help: 'Replicators found stalled and restarted.',
    registers,
    collect() {
      this.reset();
      this.inc(exchange.totals.stalls);
    },
  });
  new Counter({
    name: 'edgeq_geo_link_bytes_total',
    help: 'Bytes fetched by the exchange over each source link.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const l of exchange.linkStatus()) this.inc({ source: l.source }, l.bytesTotal);
    },
  });
  new Gauge({
    name: 'edgeq_geo_link_bytes_per_second',
    help: 'Exchange throughput over each source link, over the last watch interval.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const l of exchange.linkStatus()) this.set({ source: l.source }, l.bytesPerSec);
    },
  });
  new Gauge({
    name: 'edgeq_geo_link_healthy',
    help: '1 while the exchange fetches over the link; 0 while it is down and fetches go through other regions.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const l of exchange.linkStatus()) this.set({ source: l.source }, l.healthy ? 1 : 0);
    },
  });
}

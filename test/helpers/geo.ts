/**
 * What the multi-region tests of global topics do over HTTP against an `edgeq dev` deployment:
 * create a global topic and wait for every region to have it, produce with unique values, read a
 * partition whole (with each record's origin), drive links and processes through the control API,
 * and read each region's replication view.
 */
import { sleep, waitFor } from '../../src/testing/index.ts';
import type { Ready } from './dev-process.ts';

export interface GeoRecord {
  offset: number;
  value: string;
  originRegion: string;
  originOffset: number;
}

export interface ReplicationRow {
  origin: string;
  topic: string;
  partition: number;
  appliedOriginOffset: number;
  lagRecords: number;
  lagMs: number;
  source: string | null;
  stalled: boolean;
  appliedRecords: number;
}

export interface GeoMesh {
  replication: ReplicationRow[];
  exchange: { active: boolean; links: { source: string; healthy: boolean; bytesTotal: number }[]; gaps: { origin: string; topic: string; partition: number; firstMissingOriginOffset: number; lastMissingOriginOffset: number; records: number }[] };
}

export class Geo {
  constructor(readonly ready: Ready) {}

  get regions(): string[] {
    return this.ready.regions.map((r) => r.region);
  }

  gateway(region: string): string {
    const r = this.ready.regions.find((x) => x.region === region);
    if (!r) throw new Error(`no region ${region}`);
    return r.gateway;
  }

  async call(region: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.gateway(region)}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = text;
    }
    return { status: res.status, json };
  }

  /** Creates a global topic at `region` and waits until every region's cell has it. */
  async createGlobal(region: string, name: string, partitions: number, config: Record<string, string> = {}): Promise<void> {
    const r = await this.call(region, 'POST', '/v1/topics', { name, partitions, scope: 'global', config });
    if (r.status !== 201 && r.status !== 200) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.json)}`);
    for (const other of this.regions) {
      await waitFor(`${name} in ${other}`, 30_000, async () => ((await this.call(other, 'GET', `/v1/topics/${name}`)).status === 200 ? true : undefined), 200);
    }
  }

  /** Produces `values` to one partition at `region` (acks=all, the gateway's idempotent producer); returns their offsets. */
  async produce(region: string, topic: string, partition: number, values: string[], query = ''): Promise<{ status: number; json: any }> {
    return this.call(region, 'POST', `/v1/topics/${topic}/records${query}`, { records: values.map((value) => ({ value, partition })) });
  }

  /** Every record of the partition in `region`, in log order, read until the high watermark. */
  async readAll(region: string, topic: string, partition: number): Promise<GeoRecord[]> {
    const out: GeoRecord[] = [];
    let offset = 0;
    for (let i = 0; i < 10_000; i++) {
      const r = await this.call(region, 'GET', `/v1/topics/${topic}/partitions/${partition}/records?offset=${offset}&maxRecords=1000`);
      // Retention took the start: go on from where the log starts now.
      if (r.status === 416 && typeof r.json?.logStartOffset === 'number' && r.json.logStartOffset > offset) {
        offset = r.json.logStartOffset;
        continue;
      }
      if (r.status !== 200) throw new Error(`read ${region} ${topic}-${partition}@${offset}: ${r.status} ${JSON.stringify(r.json)}`);
      for (const rec of r.json.records as { offset: number; value: string; originRegion: string; originOffset: number }[]) {
        out.push({ offset: rec.offset, value: rec.value, originRegion: rec.originRegion, originOffset: rec.originOffset });
      }
      offset = r.json.nextOffset;
      if (offset >= r.json.highWatermark) return out;
    }
    throw new Error('readAll did not reach the high watermark');
  }

  /** Waits until every region's gateway runs the exchange (the mesh formed and each region's entry reached the others). */
  async waitForExchanges(timeoutMs: number, what = 'exchange'): Promise<void> {
    for (const r of this.regions) await waitFor(`${r}'s ${what}`, timeoutMs, async () => ((await this.mesh(r))?.exchange.active ? true : undefined), 250);
  }

  async mesh(region: string): Promise<GeoMesh | undefined> {
    const r = await this.call(region, 'GET', '/v1/mesh').catch(() => null);
    return r?.status === 200 ? (r.json as GeoMesh) : undefined;
  }

  async setLink(from: string, to: string, body: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${this.ready.control}/v1/dev/links/${from}/${to}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`PUT link ${from}->${to}: ${res.status} ${await res.text()}`);
  }

  /** Cuts (or heals) both directions between two regions. */
  async blackhole(a: string, b: string, on: boolean): Promise<void> {
    await this.setLink(a, b, { blackhole: on });
    await this.setLink(b, a, { blackhole: on });
  }

  async processes(): Promise<{ name: string; region: string; role: string; pid: number | null }[]> {
    const res = await fetch(`${this.ready.control}/v1/dev/processes`);
    return ((await res.json()) as { processes: { name: string; region: string; role: string; pid: number | null }[] }).processes;
  }

  /** Waits until every region holds `expected` records of the partition; returns each region's records. */
  async converged(topic: string, partition: number, expected: number, ms: number): Promise<Map<string, GeoRecord[]>> {
    const deadline = Date.now() + ms;
    let last = '';
    while (Date.now() < deadline) {
      const all = new Map<string, GeoRecord[]>();
      let done = true;
      for (const r of this.regions) {
        const recs = await this.readAll(r, topic, partition).catch(() => null);
        if (!recs) {
          done = false;
          continue;
        }
        all.set(r, recs);
        if (recs.length < expected) done = false;
      }
      last = [...all].map(([r, recs]) => `${r}=${recs.length}`).join(' ');
      if (done) return all;
      await sleep(250);
    }
    // What each region's exchange says of the partition: enough to start a diagnosis from (the
    // processes' logs are in <dataDir>/<region>/logs/).
    const views = await Promise.all(this.regions.map(async (r) => `${r}: ${JSON.stringify((await this.mesh(r))?.replication.filter((x) => x.topic === topic && x.partition === partition) ?? null)}`));
    throw new Error(`${topic}-${partition} did not converge on ${expected} records in ${ms} ms (${last}); replication: ${views.join('; ')}`);
  }
}

/**
 * The checks every exchange test ends with, over each region's records of one partition: every
 * acknowledged value exactly once everywhere; per origin, origin offsets strictly increasing; each
 * origin's sequence identical in every region. Returns a list of violations (empty when all hold).
 */
export function exchangeViolations(byRegion: Map<string, GeoRecord[]>, acked: Set<string>): string[] {
  const out: string[] = [];
  const seqs = new Map<string, string>();
  for (const [region, recs] of byRegion) {
    const seen = new Map<string, number>();
    for (const r of recs) seen.set(r.value, (seen.get(r.value) ?? 0) + 1);
    for (const v of acked) if (!seen.has(v)) out.push(`${region}: acknowledged ${v} missing`);
    for (const [v, n] of seen) if (n > 1) out.push(`${region}: ${v} held ${n} times`);
    const perOrigin = new Map<string, GeoRecord[]>();
    for (const r of recs) {
      if (!perOrigin.has(r.originRegion)) perOrigin.set(r.originRegion, []);
      perOrigin.get(r.originRegion)!.push(r);
    }
    for (const [origin, list] of perOrigin) {
      for (let i = 1; i < list.length; i++) if (list[i]!.originOffset <= list[i - 1]!.originOffset) out.push(`${region}: ${origin}'s origin offsets not increasing at ${list[i]!.offset}`);
      const seq = list.map((r) => `${r.originOffset}:${r.value}`).join(',');
      const prev = seqs.get(origin);
      if (prev === undefined) seqs.set(origin, seq);
      else if (prev !== seq) out.push(`${region}: ${origin}'s sequence differs from another region's`);
    }
  }
  return out;
}

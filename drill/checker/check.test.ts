// Proves that the drill checker passes a clean two-region run with every count at 0, that each
// finding fires on a fault planted as data (and only then), that bad input is refused, and that a
// run of 200 000 produced records is checked in well under a few seconds.
import { describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { isEdgeqError } from '../../src/core/index.ts';
import type { CheckedTopic, DrainedRecord, PollObservation, ProducedRecord, ProduceOutcome, ReplicaBatches } from '../types.ts';
import { checkRun, CHECK_EXAMPLES_MAX, CHECK_FINDINGS, type CheckInput } from './check.ts';

const REGIONS = ['us', 'eu'];
const TOPICS: CheckedTopic[] = [
  { name: 'g', scope: 'global', partitions: 2 },
  { name: 'l', scope: 'local', partitions: 1 },
];
/** Records per batch in the replicas' logs. */
const BATCH_RECORDS = 2;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
interface Run {
  topics: CheckedTopic[];
  regions: string[];
  produced: Mutable<ProducedRecord>[];
  drain: { regions: Record<string, Record<string, Mutable<DrainedRecord>[][]>>; highWatermarks: Record<string, Record<string, number[]>> };
  polls: Mutable<PollObservation>[];
  replicas: ReplicaBatches[];
}

/**
 * A clean run: in each region one producer per topic writes `n` records (global ones alternating
 * partitions). Each region's log of a global partition holds its own writes first (local offset =
 * origin offset), then the other region's with their origin. Every partition is polled once, whole,
 * and every cell has two replicas with the same batches.
 */
function cleanRun(n: number): Run {
  const produced: Mutable<ProducedRecord>[] = [];
  const own: Record<string, Record<string, string[][]>> = {};
  for (const region of REGIONS) {
    own[region] = { g: [[], []], l: [[]] };
    for (const t of TOPICS) {
      for (let seq = 0; seq < n; seq++) {
        const partition = seq % t.partitions;
        const log = own[region]![t.name]![partition]!;
        const id = `${region}/${t.name}/p0/${String(seq).padStart(6, '0')}`;
        const outcome: ProduceOutcome = { kind: 'acked', offset: log.length, atMs: seq };
        log.push(id);
        produced.push({ id, region, topic: t.name, partition, producer: `${region}/${t.name}/p0`, seq, sentAtMs: seq, outcome });
      }
    }
  }
  const drain: Run['drain'] = { regions: {}, highWatermarks: {} };
  const polls: Mutable<PollObservation>[] = [];
  const replicas: ReplicaBatches[] = [];
  for (const region of REGIONS) {
    drain.regions[region] = {};
    drain.highWatermarks[region] = {};
    for (const t of TOPICS) {
      const parts: Mutable<DrainedRecord>[][] = [];
      for (let p = 0; p < t.partitions; p++) {
        const records: Mutable<DrainedRecord>[] = [];
        const origins = t.scope === 'global' ? [region, ...REGIONS.filter((r) => r !== region)] : [region];
        for (const origin of origins) {
          own[origin]![t.name]![p]!.forEach((id, originOffset) => {
            const d: Mutable<DrainedRecord> = { offset: records.length, value: id };
            if (t.scope === 'global') Object.assign(d, { originRegion: origin, originOffset });
            records.push(d);
          });
        }
        parts.push(records);
        polls.push({ region, topic: t.name, partition: p, fromOffset: 0, offsets: records.map((r) => r.offset), highWatermark: records.length, atMs: 1 });
        const batches = [];
        for (let b = 0; b < records.length; b += BATCH_RECORDS) {
          batches.push({ baseOffset: b, lastOffset: Math.min(b + BATCH_RECORDS, records.length) - 1, crc: (b * 2654435761) >>> 0 });
        }
        for (const broker of ['b1', 'b2']) replicas.push({ region, broker, topic: t.name, partition: p, batches: batches.map((x) => ({ ...x })), highWatermark: records.length });
      }
      drain.regions[region]![t.name] = parts;
      drain.highWatermarks[region]![t.name] = parts.map((x) => x.length);
    }
  }
  return { topics: TOPICS, regions: REGIONS, produced, drain, polls, replicas };
}

const part = (run: Run, region: string, topic: string, p = 0): Mutable<DrainedRecord>[] => run.drain.regions[region]![topic]![p]!;
const producedOf = (run: Run, id: string): Mutable<ProducedRecord> => run.produced.find((p) => p.id === id)!;
const check = (run: Run) => checkRun(run as CheckInput);

/** The counts that must be 0 in a clean run, from a result. */
function failing(r: ReturnType<typeof checkRun>): Record<string, number> {
  const all = {
    lost: r.lost,
    unexpected: r.unexpected,
    failedFound: r.failedFound,
    duplicates: r.duplicates,
    duplicatesOfIndeterminate: r.duplicatesOfIndeterminate,
    reordered: r.reordered,
    offsetsBackwards: r.offsetsBackwards,
    emptyBelowHighWatermark: r.emptyBelowHighWatermark,
    divergentOffsets: r.divergentOffsets,
  };
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== 0));
}

describe('checkRun', () => {
  it('passes a clean run with every count at 0', () => {
    const r = check(cleanRun(8));
    expect(r.verdict).toBe('pass');
    expect(failing(r)).toEqual({});
    expect(r.acked).toBe(2 * 2 * 8);
    expect(r.indeterminate).toEqual({ total: 0, found: 0 });
    expect(Object.keys(r.examples).sort()).toEqual([...CHECK_FINDINGS].sort());
    expect(Object.values(r.examples).flat()).toEqual([]);
  });

  it('counts an acked record deleted from one region as lost there, naming the region', () => {
    const run = cleanRun(8);
    const eu = part(run, 'eu', 'g', 1);
    const gone = eu.findIndex((d) => d.originRegion === 'us');
    const [removed] = eu.splice(gone, 1);
    const r = check(run);
    expect(failing(r)).toEqual({ lost: 1 });
    expect(r.verdict).toBe('fail');
    expect(r.examples.lost).toEqual([expect.stringContaining(`${removed!.value} (acked by us at offset 0) missing in eu g-1`)]);
  });

  it('counts a value no producer sent as unexpected, and a sent one in the wrong place too', () => {
    const run = cleanRun(4);
    part(run, 'us', 'g').push({ offset: 99, value: 'never-sent', originRegion: 'us', originOffset: 99 });
    expect(failing(check(run))).toEqual({ unexpected: 1 });
    expect(check(run).examples.unexpected[0]).toContain('never-sent');

    const misplaced = cleanRun(4);
    // A local record of us read in eu's local topic was never written there.
    part(misplaced, 'eu', 'l').push({ offset: 99, value: part(misplaced, 'us', 'l')[0]!.value });
    const r = check(misplaced);
    expect(failing(r)).toEqual({ unexpected: 1 });
    expect(r.examples.unexpected[0]).toContain('was written to us l-0');
  });

  it('counts a definitely failed record that is found anyway', () => {
    const run = cleanRun(4);
    const id = part(run, 'us', 'l')[1]!.value;
    producedOf(run, id).outcome = { kind: 'failed', code: 'NOT_LEADER', atMs: 1 };
    const r = check(run);
    expect(failing(r)).toEqual({ failedFound: 1 });
    expect(r.verdict).toBe('fail');
    expect(r.acked).toBe(2 * 2 * 4 - 1);
    // Absent, the same failed record is fine.
    part(run, 'us', 'l').splice(1, 1);
    expect(check(run).verdict).toBe('pass');
  });

  it('fails a duplicate of an acked record and allows one of an indeterminate or retried record', () => {
    const acked = cleanRun(4);
    const d = part(acked, 'us', 'g')[1]!;
    part(acked, 'us', 'g').splice(2, 0, { ...d, offset: 2 });
    const r = check(acked);
    expect(failing(r)).toEqual({ duplicates: 1 });
    expect(r.verdict).toBe('fail');

    const indeterminate = cleanRun(4);
    const e = part(indeterminate, 'us', 'g')[1]!;
    part(indeterminate, 'us', 'g').splice(2, 0, { ...e, offset: 2 });
    producedOf(indeterminate, e.value).outcome = { kind: 'indeterminate', code: 'REQUEST_TIMED_OUT', atMs: 1 };
    const s = check(indeterminate);
    expect(failing(s)).toEqual({ duplicatesOfIndeterminate: 1 });
    expect(s.indeterminate).toEqual({ total: 1, found: 1 });
    expect(s.verdict).toBe('pass');

    // The producer retried the id (two attempts in `produced`): the duplicate is allowed.
    const retried = cleanRun(4);
    const f = part(retried, 'eu', 'l')[0]!;
    part(retried, 'eu', 'l').splice(1, 0, { ...f, offset: 1 });
    retried.produced.push({ ...producedOf(retried, f.value), outcome: { kind: 'acked', offset: 1, atMs: 2 } });
    expect(failing(check(retried))).toEqual({ duplicatesOfIndeterminate: 1 });
  });

  it('counts two records of one producer swapped as one reorder, by seq and by origin offset', () => {
    const local = cleanRun(6);
    const l = part(local, 'us', 'l');
    [l[2], l[3]] = [l[3]!, l[2]!];
    const r = check(local);
    expect(failing(r)).toEqual({ reordered: 1 });
    expect(r.examples.reordered[0]).toContain('seq 2) read after seq 3');

    // In a remote region, records swapped by the exchange invert both orders: still counted once.
    const remote = cleanRun(6);
    const g = part(remote, 'eu', 'g');
    const k = g.findIndex((d) => d.originRegion === 'us');
    [g[k], g[k + 1]] = [g[k + 1]!, g[k]!];
    expect(failing(check(remote))).toEqual({ reordered: 1 });

    // Origin offsets out of order with the producer's order intact: the origin check alone fires.
    const origin = cleanRun(6);
    const h = part(origin, 'eu', 'g');
    const j = h.findIndex((d) => d.originRegion === 'us');
    [h[j]!.originOffset, h[j + 1]!.originOffset] = [h[j + 1]!.originOffset, h[j]!.originOffset];
    const o = check(origin);
    expect(failing(o)).toEqual({ reordered: 1 });
    expect(o.examples.reordered[0]).toContain('origin offset 0) read after origin offset 1 of us');
  });

  it('counts a poll whose offsets go backwards or start below its fromOffset', () => {
    const run = cleanRun(6);
    run.polls.push({ region: 'us', topic: 'g', partition: 0, fromOffset: 2, offsets: [2, 4, 3], highWatermark: 6, atMs: 5 });
    run.polls.push({ region: 'us', topic: 'g', partition: 0, fromOffset: 3, offsets: [1, 2], highWatermark: 6, atMs: 6 });
    run.polls.push({ region: 'us', topic: 'g', partition: 0, fromOffset: 3, offsets: [3, 3], highWatermark: 6, atMs: 7 });
    const r = check(run);
    expect(failing(r)).toEqual({ offsetsBackwards: 3 });
    expect(r.examples.offsetsBackwards[0]).toContain('offset 3 after 4');
  });

  it('counts an empty poll below the high watermark, not one at it', () => {
    const run = cleanRun(6);
    run.polls.push({ region: 'eu', topic: 'l', partition: 0, fromOffset: 6, offsets: [], highWatermark: 6, atMs: 5 });
    expect(check(run).verdict).toBe('pass');
    run.polls.push({ region: 'eu', topic: 'l', partition: 0, fromOffset: 4, offsets: [], highWatermark: 6, atMs: 6 });
    expect(failing(check(run))).toEqual({ emptyBelowHighWatermark: 1 });
  });

  it('counts the offsets of a batch two replicas hold with different CRCs, boundaries, or a failed CRC', () => {
    const crc = cleanRun(8);
    const i = crc.replicas.findIndex((x) => x.region === 'eu' && x.topic === 'g' && x.partition === 1 && x.broker === 'b2');
    const rep = crc.replicas[i]!;
    crc.replicas[i] = { ...rep, batches: rep.batches.map((b, k) => (k === 1 ? { ...b, crc: b.crc ^ 1 } : b)) };
    const r = check(crc);
    const b1 = rep.batches[1]!;
    expect(failing(r)).toEqual({ divergentOffsets: b1.lastOffset - b1.baseOffset + 1 });
    expect(r.examples.divergentOffsets[0]).toContain(`eu g-1 offsets ${b1.baseOffset}..${b1.lastOffset}: b1`);

    // [0..1][2..3] against [0..3] with the same bytes elsewhere: all four offsets differ.
    const bounds = cleanRun(8);
    const j = bounds.replicas.findIndex((x) => x.region === 'us' && x.topic === 'l' && x.broker === 'b1');
    const other = bounds.replicas[j]!;
    bounds.replicas[j] = { ...other, batches: [{ baseOffset: 0, lastOffset: 3, crc: 7 }, ...other.batches.slice(2)] };
    expect(failing(check(bounds))).toEqual({ divergentOffsets: 4 });

    // Above the lower high watermark of the cell nothing is compared.
    const above = cleanRun(8);
    const k = above.replicas.findIndex((x) => x.region === 'us' && x.topic === 'l' && x.broker === 'b2');
    const last = above.replicas[k]!;
    above.replicas[k] = { ...last, highWatermark: 6, batches: last.batches.map((b) => (b.baseOffset >= 6 ? { ...b, crc: 1 } : b)) };
    expect(check(above).verdict).toBe('pass');

    const corrupt = cleanRun(8);
    const m = corrupt.replicas.findIndex((x) => x.region === 'us' && x.topic === 'l' && x.broker === 'b2');
    const c = corrupt.replicas[m]!;
    corrupt.replicas[m] = { ...c, batches: c.batches.map((b, n) => (n === 0 ? { ...b, corrupt: true } : b)) };
    expect(failing(check(corrupt))).toEqual({ divergentOffsets: BATCH_RECORDS });
  });

  it('requires a local record only in its own region', () => {
    const run = cleanRun(4);
    // Clean: us's local records are nowhere in eu, and that passes.
    expect(part(run, 'eu', 'l').some((d) => d.value.startsWith('us/'))).toBe(false);
    expect(check(run).verdict).toBe('pass');
    const [gone] = part(run, 'us', 'l').splice(0, 1);
    const r = check(run);
    expect(failing(r)).toEqual({ lost: 1 });
    expect(r.examples.lost[0]).toContain(`${gone!.value} (acked by us at offset 0) missing in us l-0`);
  });

  it('keeps at most CHECK_EXAMPLES_MAX examples per finding', () => {
    const run = cleanRun(4);
    for (let k = 0; k < CHECK_EXAMPLES_MAX + 5; k++) part(run, 'us', 'l').push({ offset: 100 + k, value: `junk-${k}` });
    const r = check(run);
    expect(r.unexpected).toBe(CHECK_EXAMPLES_MAX + 5);
    expect(r.examples.unexpected.length).toBe(CHECK_EXAMPLES_MAX);
  });

  it('refuses input that does not hold together, with INVALID_DATA naming the value', () => {
    const code = (f: (run: Run) => void): string | null => {
      const run = cleanRun(2);
      f(run);
      try {
        check(run);
        return null;
      } catch (err) {
        return isEdgeqError(err) ? `${err.code}: ${err.message}` : String(err);
      }
    };
    expect(code((r) => (r.produced[0]!.region = 'mars'))).toMatch(/^INVALID_DATA: .*region mars/);
    expect(code((r) => (r.produced[0]!.partition = 5))).toMatch(/^INVALID_DATA: .*partition 5 of/);
    expect(code((r) => (r.drain.regions['mars'] = {}))).toMatch(/^INVALID_DATA: drain region mars/);
    expect(code((r) => (r.polls[0]!.topic = 'nope'))).toMatch(/^INVALID_DATA: .*topic nope/);
    expect(code((r) => r.produced.push({ ...r.produced[0]!, seq: 9 }))).toMatch(/^INVALID_DATA: .*appears twice/);
    expect(code((r) => (r.regions = []))).toMatch(/^INVALID_DATA: no regions/);
    expect(code((r) => (r.replicas[0] = { ...r.replicas[0]!, batches: [{ baseOffset: 2, lastOffset: 3, crc: 0 }, { baseOffset: 0, lastOffset: 1, crc: 0 }] }))).toMatch(
      /^INVALID_DATA: .*out of order/,
    );
  });

  it('checks 200 000 produced records in well under a few seconds', () => {
    // 4 producers of 50 000 records: 200 000 produced, global ones held in both regions.
    const run = cleanRun(50_000);
    expect(run.produced.length).toBe(200_000);
    const started = performance.now();
    const r = check(run);
    const ms = performance.now() - started;
    console.log(`checkRun: 200000 produced, ${REGIONS.length} regions, ${r.acked} acked: ${ms.toFixed(0)} ms`);
    expect(r.verdict).toBe('pass');
    expect(r.acked).toBe(200_000);
    // Measured ~0.3 s alone; generous for a loaded 2-core machine.
    expect(ms).toBeLessThan(5_000);
  });
});

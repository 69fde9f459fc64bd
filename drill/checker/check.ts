/**
 * The drill's checker (issue 16): what Jepsen's Kafka and total-queue checkers check, adapted to
 * regions. It reads what the producers saw (`produced`), every region's partitions as drained after
 * the heal, the consumers' polls during the run and each replica's batches, and counts:
 *
 * - lost: an acked record missing where it must be: every region for a global topic (the exchange
 *   keeps a record in the same partition index everywhere, docs/exchange.md), its origin region for
 *   a local one; counted once per (record, region);
 * - unexpected: a value no producer sent, or a sent one found where it was never written (another
 *   topic or partition, or a local topic of another region);
 * - failedFound: a record whose every attempt failed definitely, found anyway (once per record);
 * - duplicates: a (record, region) holding the record more than once; allowed, and counted in
 *   duplicatesOfIndeterminate instead, when an attempt was indeterminate or the producer sent the
 *   id more than once (a retry appears in `produced` as another entry with the same id);
 * - reordered: a record read after a later one of the same producer (by `seq`), or after a later
 *   one of the same origin (by origin offset): each such record counted once, its first copy only;
 * - offsetsBackwards and emptyBelowHighWatermark: polls (Jepsen's non-monotonic and lost reads);
 * - divergentOffsets: offsets below the cell's lowest high watermark held by two replicas in
 *   batches that differ (boundaries or CRC), or held in a batch whose CRC fails.
 *
 * One pass over `produced` into a map, one over each drained partition; memory is the run's size.
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { CheckedTopic, CheckResult, Drain, PollObservation, ProducedRecord, ReplicaBatches } from '../types.ts';

/** Examples kept per finding: enough to start debugging, few enough to print in a report. */
export const CHECK_EXAMPLES_MAX = 10;

/** Every finding that keeps examples, in the order the report prints them. */
export const CHECK_FINDINGS = [
  'lost',
  'unexpected',
  'failedFound',
  'duplicates',
  'duplicatesOfIndeterminate',
  'reordered',
  'indeterminateFound',
  'offsetsBackwards',
  'emptyBelowHighWatermark',
  'divergentOffsets',
] as const;
export type CheckFinding = (typeof CHECK_FINDINGS)[number];

export interface CheckInput {
  readonly topics: readonly CheckedTopic[];
  readonly regions: readonly string[];
  readonly produced: readonly ProducedRecord[];
  readonly drain: Drain;
  readonly polls: readonly PollObservation[];
  readonly replicas: readonly ReplicaBatches[];
}

/** One produced id after its attempts are merged. */
interface Sent {
  readonly first: ProducedRecord;
  outcome: 'acked' | 'indeterminate' | 'failed';
  ackedOffset: number;
  attempts: number;
  nonFailed: number;
  indeterminate: boolean;
}

class Examples {
  readonly byKind: Record<CheckFinding, string[]> = Object.fromEntries(CHECK_FINDINGS.map((k) => [k, []])) as unknown as Record<
    CheckFinding,
    string[]
  >;
  add(kind: CheckFinding, text: () => string): void {
    const list = this.byKind[kind];
    if (list.length < CHECK_EXAMPLES_MAX) list.push(text());
  }
}

/** A CheckResult whose examples have a list, maybe empty, for every finding. */
export type CheckRunResult = CheckResult & { readonly examples: Readonly<Record<CheckFinding, readonly string[]>> };

/** Checks one run; throws INVALID_DATA (naming the value) when the input does not hold together. */
export function checkRun(input: CheckInput): CheckRunResult {
  const topics = validateTopics(input.topics);
  const regionIndex = validateRegions(input.regions);
  const sent = mergeProduced(input.produced, topics, regionIndex);
  const ex = new Examples();
  const records = [...sent.values()];
  const indexOf = new Map<string, number>();
  records.forEach((s, i) => indexOf.set(s.first.id, i));
  // copies[region][record]: how many times the record sits where it belongs in that region.
  const copies = input.regions.map(() => new Uint32Array(records.length));

  let unexpected = 0;
  let reordered = 0;
  for (const [region, byTopic] of Object.entries(input.drain.regions)) {
    const r = regionIndex.get(region);
    if (r === undefined) throw invalid(`drain region ${region} is not one of the run's regions (${input.regions.join(', ')})`, { region });
    for (const [topic, partitions] of Object.entries(byTopic)) {
      const t = topics.get(topic);
      if (!t) throw invalid(`drain topic ${topic} of ${region} is not a checked topic`, { region, topic });
      if (partitions.length > t.partitions) {
        throw invalid(`drain of ${region} has ${partitions.length} partitions of ${topic}, which has ${t.partitions}`, { region, topic });
      }
      partitions.forEach((drained, partition) => {
        const lastSeq = new Map<string, number>();
        const lastOrigin = new Map<string, number>();
        for (const d of drained) {
          const i = indexOf.get(d.value);
          const s = i === undefined ? undefined : records[i]!;
          const at = `${region} ${topic}-${partition}@${d.offset}`;
          if (s === undefined || i === undefined) {
            unexpected++;
            ex.add('unexpected', () => `${at}: ${JSON.stringify(d.value.slice(0, 80))} was never sent`);
            continue;
          }
          const p = s.first;
          if (p.topic !== topic || p.partition !== partition || (t.scope === 'local' && p.region !== region)) {
            unexpected++;
            ex.add('unexpected', () => `${at}: ${p.id} was written to ${p.region} ${p.topic}-${p.partition}`);
            continue;
          }
          const n = ++copies[r]![i]!;
          // Order is judged on first copies: a later copy is a duplicate, counted as one.
          if (n > 1) continue;
          const prevSeq = lastSeq.get(p.producer);
          const bySeq = prevSeq !== undefined && p.seq < prevSeq;
          lastSeq.set(p.producer, p.seq);
          let byOrigin = false;
          let prevOrigin: number | undefined;
          if (d.originRegion !== undefined && d.originOffset !== undefined) {
            prevOrigin = lastOrigin.get(d.originRegion);
            byOrigin = prevOrigin !== undefined && d.originOffset < prevOrigin;
            lastOrigin.set(d.originRegion, d.originOffset);
          }
          if (bySeq || byOrigin) {
            reordered++;
            ex.add('reordered', () =>
              bySeq
                ? `${at}: ${p.id} (seq ${p.seq}) read after seq ${prevSeq} of producer ${p.producer}`
                : `${at}: ${p.id} (origin offset ${d.originOffset}) read after origin offset ${prevOrigin} of ${d.originRegion}`,
            );
          }
        }
      });
    }
  }

  let acked = 0;
  let lost = 0;
  let failedFound = 0;
  let duplicates = 0;
  let duplicatesOfIndeterminate = 0;
  let indeterminateTotal = 0;
  let indeterminateFound = 0;
  records.forEach((s, i) => {
    const p = s.first;
    const where = input.regions.filter((_, r) => copies[r]![i]! > 0);
    if (s.outcome === 'acked') {
      acked++;
      const must = topics.get(p.topic)!.scope === 'global' ? input.regions : [p.region];
      for (const region of must) {
        if (copies[regionIndex.get(region)!]![i]! > 0) continue;
        lost++;
        ex.add('lost', () => `${p.id} (acked by ${p.region} at offset ${s.ackedOffset}) missing in ${region} ${p.topic}-${p.partition}`);
      }
    } else if (s.outcome === 'failed') {
      if (where.length > 0) {
        failedFound++;
        ex.add('failedFound', () => `${p.id} failed (${failCode(s)}) but is in ${where.join(', ')}`);
      }
    } else {
      indeterminateTotal++;
      if (where.length > 0) {
        indeterminateFound++;
        ex.add('indeterminateFound', () => `${p.id} in ${where.join(', ')}`);
      }
    }
    const allowed = s.indeterminate || s.nonFailed > 1;
    input.regions.forEach((region, r) => {
      const n = copies[r]![i]!;
      if (n < 2) return;
      const text = (): string => `${p.id} ${n} times in ${region} ${p.topic}-${p.partition} (${s.outcome}, ${s.attempts} attempt(s))`;
      if (allowed) {
        duplicatesOfIndeterminate++;
        ex.add('duplicatesOfIndeterminate', text);
      } else {
        duplicates++;
        ex.add('duplicates', text);
      }
    });
  });

  const { offsetsBackwards, emptyBelowHighWatermark } = checkPolls(input.polls, topics, regionIndex, ex);
  const divergentOffsets = checkReplicas(input.replicas, topics, regionIndex, ex);
  const pass =
    lost === 0 &&
    unexpected === 0 &&
    failedFound === 0 &&
    duplicates === 0 &&
    reordered === 0 &&
    offsetsBackwards === 0 &&
    emptyBelowHighWatermark === 0 &&
    divergentOffsets === 0;
  return {
    acked,
    lost,
    unexpected,
    duplicates,
    duplicatesOfIndeterminate,
    reordered,
    indeterminate: { total: indeterminateTotal, found: indeterminateFound },
    failedFound,
    offsetsBackwards,
    emptyBelowHighWatermark,
    divergentOffsets,
    examples: ex.byKind,
    verdict: pass ? 'pass' : 'fail',
  };
}

/** A poll counts once per kind: offsets not strictly increasing from `fromOffset`, or nothing below the HWM. */
function checkPolls(
  polls: readonly PollObservation[],
  topics: ReadonlyMap<string, CheckedTopic>,
  regions: ReadonlyMap<string, number>,
  ex: Examples,
): { offsetsBackwards: number; emptyBelowHighWatermark: number } {
  let offsetsBackwards = 0;
  let emptyBelowHighWatermark = 0;
  for (const poll of polls) {
    checkPlace(poll, topics, regions, 'poll');
    const at = `${poll.region} ${poll.topic}-${poll.partition} poll from ${poll.fromOffset} at ${poll.atMs} ms`;
    const o = poll.offsets;
    let bad = -1;
    for (let k = 0; k < o.length && bad < 0; k++) {
      if (o[k]! < (k === 0 ? poll.fromOffset : o[k - 1]! + 1)) bad = k;
    }
    if (bad >= 0) {
      offsetsBackwards++;
      ex.add('offsetsBackwards', () => `${at}: offset ${o[bad]} after ${bad === 0 ? `asking from ${poll.fromOffset}` : o[bad - 1]}`);
    }
    if (o.length === 0 && poll.fromOffset < poll.highWatermark) {
      emptyBelowHighWatermark++;
      ex.add('emptyBelowHighWatermark', () => `${at}: nothing returned below the high watermark ${poll.highWatermark}`);
    }
  }
  return { offsetsBackwards, emptyBelowHighWatermark };
}

type Batch = ReplicaBatches['batches'][number];

/**
 * Inside each cell, walks the offsets below the lowest high watermark in runs where no replica's
 * batch starts or ends, so the work is the number of batches, not of offsets.
 */
function checkReplicas(
  replicas: readonly ReplicaBatches[],
  topics: ReadonlyMap<string, CheckedTopic>,
  regions: ReadonlyMap<string, number>,
  ex: Examples,
): number {
  const cells = new Map<string, ReplicaBatches[]>();
  for (const rep of replicas) {
    checkPlace(rep, topics, regions, `replica ${rep.broker}`);
    let prevLast = -1;
    for (const b of rep.batches) {
      if (!(Number.isSafeInteger(b.baseOffset) && Number.isSafeInteger(b.lastOffset) && b.baseOffset > prevLast && b.lastOffset >= b.baseOffset)) {
        throw invalid(`replica ${rep.broker} of ${rep.region} ${rep.topic}-${rep.partition}: batch ${b.baseOffset}..${b.lastOffset} is out of order`, {
          broker: rep.broker,
          baseOffset: b.baseOffset,
        });
      }
      prevLast = b.lastOffset;
    }
    const key = `${rep.region}\u0000${rep.topic}\u0000${rep.partition}`;
    const cell = cells.get(key);
    if (cell) cell.push(rep);
    else cells.set(key, [rep]);
  }
  let divergent = 0;
  for (const cell of cells.values()) {
    const hw = Math.min(...cell.map((c) => c.highWatermark));
    const points = new Set<number>();
    for (const c of cell) {
      for (const b of c.batches) {
        if (b.baseOffset < hw) points.add(b.baseOffset);
        if (b.lastOffset + 1 < hw) points.add(b.lastOffset + 1);
      }
    }
    const starts = [...points].sort((a, b) => a - b);
    const next = cell.map(() => 0);
    starts.forEach((from, k) => {
      const to = k + 1 < starts.length ? starts[k + 1]! : hw;
      const held: { broker: string; b: Batch }[] = [];
      cell.forEach((c, j) => {
        while (next[j]! < c.batches.length && c.batches[next[j]!]!.lastOffset < from) next[j]!++;
        const b = c.batches[next[j]!];
        if (b && b.baseOffset <= from) held.push({ broker: c.broker, b });
      });
      const ref = held[0];
      if (!ref) return;
      const differs = held.some((h) => h.b.corrupt === true || h.b.baseOffset !== ref.b.baseOffset || h.b.lastOffset !== ref.b.lastOffset || h.b.crc !== ref.b.crc);
      if (!differs) return;
      divergent += to - from;
      const c0 = cell[0]!;
      ex.add('divergentOffsets', () => {
        const shown = held.map((h) => `${h.broker} [${h.b.baseOffset}..${h.b.lastOffset} crc ${h.b.crc.toString(16)}${h.b.corrupt ? ' corrupt' : ''}]`);
        return `${c0.region} ${c0.topic}-${c0.partition} offsets ${from}..${to - 1}: ${shown.join(' vs ')}`;
      });
    });
  }
  return divergent;
}

/** One entry per id: an acked attempt makes it acked; otherwise an indeterminate one makes it indeterminate. */
function mergeProduced(
  produced: readonly ProducedRecord[],
  topics: ReadonlyMap<string, CheckedTopic>,
  regions: ReadonlyMap<string, number>,
): Map<string, Sent> {
  const sent = new Map<string, Sent>();
  for (const p of produced) {
    if (typeof p.id !== 'string' || p.id.length === 0) throw invalid(`produced record with id ${JSON.stringify(p.id)}: ids are non-empty strings`, { id: p.id });
    checkPlace(p, topics, regions, `produced ${p.id}`);
    if (!Number.isFinite(p.seq)) throw invalid(`produced ${p.id} has seq ${String(p.seq)}`, { id: p.id, seq: p.seq });
    const kind = p.outcome?.kind;
    if (kind !== 'acked' && kind !== 'failed' && kind !== 'indeterminate') {
      throw invalid(`produced ${p.id} has outcome ${JSON.stringify(kind)}`, { id: p.id });
    }
    let s = sent.get(p.id);
    if (!s) {
      s = { first: p, outcome: 'failed', ackedOffset: -1, attempts: 0, nonFailed: 0, indeterminate: false };
      sent.set(p.id, s);
    } else if (s.first.topic !== p.topic || s.first.partition !== p.partition || s.first.producer !== p.producer || s.first.seq !== p.seq || s.first.region !== p.region) {
      throw invalid(`produced ${p.id} appears twice with different places or sequences`, { id: p.id });
    }
    s.attempts++;
    if (kind !== 'failed') s.nonFailed++;
    if (kind === 'indeterminate') s.indeterminate = true;
    if (p.outcome.kind === 'acked') {
      s.outcome = 'acked';
      s.ackedOffset = p.outcome.offset;
    } else if (kind === 'indeterminate' && s.outcome === 'failed') s.outcome = 'indeterminate';
  }
  return sent;
}

function failCode(s: Sent): string {
  return s.first.outcome.kind === 'acked' ? 'acked' : s.first.outcome.code;
}

function checkPlace(
  x: { readonly region: string; readonly topic: string; readonly partition: number },
  topics: ReadonlyMap<string, CheckedTopic>,
  regions: ReadonlyMap<string, number>,
  what: string,
): void {
  if (!regions.has(x.region)) throw invalid(`${what}: region ${x.region} is not one of the run's regions`, { region: x.region });
  const t = topics.get(x.topic);
  if (!t) throw invalid(`${what}: topic ${x.topic} is not a checked topic`, { topic: x.topic });
  if (!Number.isSafeInteger(x.partition) || x.partition < 0 || x.partition >= t.partitions) {
    throw invalid(`${what}: partition ${x.partition} of ${x.topic} does not exist (${t.partitions} partitions)`, { topic: x.topic, partition: x.partition });
  }
}

function validateTopics(topics: readonly CheckedTopic[]): Map<string, CheckedTopic> {
  const byName = new Map<string, CheckedTopic>();
  for (const t of topics) {
    if (byName.has(t.name)) throw invalid(`topic ${t.name} is listed twice`, { topic: t.name });
    if (t.scope !== 'global' && t.scope !== 'local') throw invalid(`topic ${t.name} has scope ${JSON.stringify(t.scope)}`, { topic: t.name });
    if (!Number.isSafeInteger(t.partitions) || t.partitions < 1) throw invalid(`topic ${t.name} has ${t.partitions} partitions`, { topic: t.name });
    byName.set(t.name, t);
  }
  return byName;
}

function validateRegions(regions: readonly string[]): Map<string, number> {
  if (regions.length === 0) throw invalid('no regions to check', {});
  const index = new Map<string, number>();
  regions.forEach((r, i) => {
    if (typeof r !== 'string' || r.length === 0 || index.has(r)) throw invalid(`region ${JSON.stringify(r)} is empty or listed twice`, { region: r });
    index.set(r, i);
  });
  return index;
}

function invalid(message: string, details: Record<string, unknown>): EdgeqError {
  return new EdgeqError('INVALID_DATA', message, { details });
}

/**
 * A fake gateway for the workload's unit tests: a Hono app with the routes the workload uses
 * (create and describe topics, produce one record, read a partition), an in-memory log per topic
 * and partition, and a script that decides each produce's answer. Test support only.
 */
import { Hono } from 'hono';
import type { FetchLike } from './http.ts';

/** What the script answers to a produce: written and acked, a problem, or no answer until released. */
export type FakeAnswer = 'ok' | 'hang' | { status: number; code: string; retryAfter?: string; write?: boolean };

/** A scripted produce: the record's value (its id), the partition, how many times this id came. */
export type ProduceScript = (value: string, partition: number, attempt: number) => FakeAnswer;

interface FakeTopic {
  scope: 'global' | 'local';
  logs: { value: string; originRegion: string; originOffset: number }[][];
}

export class FakeGateway {
  readonly topics = new Map<string, FakeTopic>();
  /** Every produce request received: value, partition, and the time seen (Date.now()). */
  readonly produces: { value: string; partition: number }[] = [];
  private readonly attempts = new Map<string, number>();
  private readonly hung: (() => void)[] = [];
  script: ProduceScript = () => 'ok';
  /** An empty read waits this long (real ms) when it asked to wait, as a long poll would. */
  emptyReadWaitMs = 20;
  /** Reads return at most this many records (to test paging). */
  readPageMax = 10_000;
  /** Set: a topic DELETE answers this status instead of deleting. */
  deleteAnswer: number | null = null;
  readonly app = new Hono();

  constructor(readonly region = 'r1') {
    const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
      new Response(JSON.stringify({ type: `urn:edgeq:error:${code}`, title: code, status, code, detail: code, retriable: false }), { status, headers: { 'content-type': 'application/problem+json', ...headers } });
    this.app.post('/v1/topics', async (c) => {
      const { name, partitions, scope } = (await c.req.json()) as { name: string; partitions: number; scope: 'global' | 'local' };
      const had = this.topics.get(name);
      if (had) {
        if (had.scope !== scope) return new Response(JSON.stringify({ code: 'TOPIC_ALREADY_EXISTS', detail: `topic "${name}" exists with scope ${had.scope}; a topic's scope cannot change` }), { status: 409 });
        return problem(409, 'TOPIC_ALREADY_EXISTS');
      }
      this.topics.set(name, { scope, logs: Array.from({ length: partitions }, () => []) });
      return c.json({ name }, 201);
    });
    this.app.get('/v1/topics/:name', (c) => {
      const t = this.topics.get(c.req.param('name'));
      if (!t) return problem(404, 'UNKNOWN_TOPIC_OR_PARTITION');
      return c.json({ name: c.req.param('name'), partitions: t.logs.map((_, partition) => ({ partition })) });
    });
    this.app.delete('/v1/topics/:name', (c) => {
      if (this.deleteAnswer !== null) return problem(this.deleteAnswer, 'UNAVAILABLE');
      if (!this.topics.delete(c.req.param('name'))) return problem(404, 'UNKNOWN_TOPIC_OR_PARTITION');
      return c.body(null, 204);
    });
    this.app.post('/v1/topics/:name/records', async (c) => {
      const t = this.topics.get(c.req.param('name'));
      if (!t) return problem(404, 'UNKNOWN_TOPIC_OR_PARTITION');
      const body = (await c.req.json()) as { records: { value: string; partition: number }[] };
      const rec = body.records[0]!;
      this.produces.push({ value: rec.value, partition: rec.partition });
      const attempt = (this.attempts.get(rec.value) ?? 0) + 1;
      this.attempts.set(rec.value, attempt);
      const answer = this.script(rec.value, rec.partition, attempt);
      if (answer === 'hang') return new Promise<Response>((resolve) => this.hung.push(() => resolve(problem(503, 'NOT_LEADER'))));
      const log = t.logs[rec.partition]!;
      const write = () => {
        log.push({ value: rec.value, originRegion: this.region, originOffset: log.length });
        return log.length - 1;
      };
      if (answer === 'ok') return c.json({ offsets: [{ partition: rec.partition, offset: write() }] });
      if (answer.write) write();
      return problem(answer.status, answer.code, answer.retryAfter !== undefined ? { 'retry-after': answer.retryAfter } : {});
    });
    this.app.get('/v1/topics/:name/partitions/:p/records', async (c) => {
      const t = this.topics.get(c.req.param('name'));
      const log = t?.logs[Number(c.req.param('p'))];
      if (!t || !log) return problem(404, 'UNKNOWN_TOPIC_OR_PARTITION');
      const offset = Number(c.req.query('offset') ?? 0);
      if (offset >= log.length && Number(c.req.query('waitMs') ?? 0) > 0) await new Promise((r) => setTimeout(r, this.emptyReadWaitMs));
      const max = Math.min(this.readPageMax, Number(c.req.query('maxRecords') ?? 100));
      const slice = log.slice(offset, offset + max).map((r, i) => ({ offset: offset + i, value: r.value, ...(t.scope === 'global' ? { originRegion: r.originRegion, originOffset: r.originOffset } : {}) }));
      return c.json({ records: slice, nextOffset: offset + slice.length, highWatermark: log.length });
    });
  }

  /** The app as a FetchLike (in process, no sockets). */
  get fetch(): FetchLike {
    return async (url, init) => this.app.request(url, init);
  }

  /** Answers every hung produce (503 NOT_LEADER, which the workload calls indeterminate). */
  releaseHung(): void {
    for (const r of this.hung.splice(0)) r();
  }

  get hungCount(): number {
    return this.hung.length;
  }
}

/**
 * One consumer of the checked workload: long-polls one partition of one region from offset 0 and
 * reports every answer as a PollObservation, so the checker can see offsets going backwards and
 * empty answers below the high watermark. It follows the answer's `nextOffset`, as a client would.
 */
import type { PollObservation } from '../types.ts';
import { requestJson, sleepOn, type GatewayHttpOptions } from './http.ts';

/** How long one poll waits for records at the gateway. */
export const READ_WAIT_MS = 1_000;
/** Records one poll asks for at most. */
export const READ_PAGE_RECORDS = 500;
/** A poll not answered within its wait plus this is abandoned (a gateway that stopped answering). */
export const READ_TIMEOUT_SLACK_MS = 5_000;
/** Pause after a failed poll, so a region that is down is not polled in a tight loop. */
export const READ_ERROR_BACKOFF_MS = 250;
/** Polls one reader makes at most: at ~100 polls/s, about 28 hours (the loop ends on stop long before). */
export const READER_POLLS_MAX = 10_000_000;

/** What a reader is built from. */
export interface ReaderOptions {
  readonly region: string;
  readonly gateway: string;
  readonly topic: string;
  readonly partition: number;
  readonly http: GatewayHttpOptions;
  readonly onPoll: (p: PollObservation) => void;
  readonly onError: (code: string) => void;
}

export class PartitionReader {
  private readonly stop$ = new AbortController();
  private loop: Promise<void> | null = null;
  /** Where the next poll reads from. */
  offset = 0;

  constructor(private readonly o: ReaderOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Ends the poll in flight and the loop. */
  async stop(): Promise<void> {
    this.stop$.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { region, gateway, topic, partition, http } = this.o;
    const base = `${gateway}/v1/topics/${encodeURIComponent(topic)}/partitions/${partition}/records`;
    for (let i = 0; i < READER_POLLS_MAX && !this.stop$.signal.aborted; i++) {
      const fromOffset = this.offset;
      const url = `${base}?offset=${fromOffset}&waitMs=${READ_WAIT_MS}&maxRecords=${READ_PAGE_RECORDS}`;
      const answer = await requestJson(url, { method: 'GET', timeoutMs: READ_WAIT_MS + READ_TIMEOUT_SLACK_MS, signal: this.stop$.signal }, http);
      if (answer.kind === 'aborted') return;
      const page = answer.kind === 'response' && answer.status === 200 ? parsePage(answer.body) : null;
      if (page === null) {
        this.o.onError(answer.kind === 'response' ? `HTTP_${answer.status}` : answer.kind === 'network' ? answer.code : 'TIMEOUT');
        if (!(await sleepOn(http.clock, READ_ERROR_BACKOFF_MS, this.stop$.signal))) return;
        continue;
      }
      this.o.onPoll({ region, topic, partition, fromOffset, offsets: page.offsets, highWatermark: page.highWatermark, atMs: http.clock.nowMs() });
      this.offset = page.nextOffset ?? (page.offsets.length > 0 ? page.offsets[page.offsets.length - 1]! + 1 : fromOffset);
    }
  }
}

/** The offsets, next offset and high watermark of a read answer, or null when it has not that shape. */
export function parsePage(body: unknown): { offsets: number[]; nextOffset: number | null; highWatermark: number } | null {
  if (body === null || typeof body !== 'object') return null;
  const { records, nextOffset, highWatermark } = body as { records?: unknown; nextOffset?: unknown; highWatermark?: unknown };
  if (!Array.isArray(records) || typeof highWatermark !== 'number') return null;
  const offsets: number[] = [];
  for (const r of records) {
    const off = (r as { offset?: unknown } | null)?.offset;
    if (typeof off !== 'number') return null;
    offsets.push(off);
  }
  return { offsets, nextOffset: typeof nextOffset === 'number' ? nextOffset : null, highWatermark };
}

/** A region's cell through its gateway (`GET /v1/cell`), in the runner's shape. */
import { EdgeqError } from '../../src/core/index.ts';
import type { CellView } from './types.ts';

/** Bound on one /v1/cell call. */
export const CELL_CALL_MS = 5_000;

interface RawCell {
  brokers?: { id: number; alive: boolean }[];
  partitions?: { topic: string; partition: number; leaderId: number; leaderEpoch: number; isr: number[]; replicas: number[]; highWatermark: number }[];
}

/** The cell as `gateway` reports it; BROKER_NOT_AVAILABLE when it does not answer. */
export async function fetchCell(gateway: string, apiKey: string | null, fetchImpl: typeof fetch = fetch): Promise<CellView> {
  let res: Response;
  try {
    res = await fetchImpl(`${gateway.replace(/\/+$/, '')}/v1/cell`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(CELL_CALL_MS) });
  } catch (err) {
    throw new EdgeqError('BROKER_NOT_AVAILABLE', `${gateway}/v1/cell does not answer (${(err as Error).message})`, { cause: err, details: { gateway } });
  }
  if (!res.ok) {
    const text = await res.text();
    throw new EdgeqError('BROKER_NOT_AVAILABLE', `${gateway}/v1/cell: HTTP ${res.status} ${text.slice(0, 200)}`, { details: { gateway, status: res.status } });
  }
  const raw = (await res.json()) as RawCell;
  return {
    brokers: (raw.brokers ?? []).map((b) => ({ id: b.id, alive: b.alive })),
    partitions: (raw.partitions ?? []).map((p) => ({
      topic: p.topic,
      partition: p.partition,
      leader: p.leaderId >= 0 ? p.leaderId : null,
      epoch: p.leaderEpoch,
      isr: [...p.isr],
      replicas: [...p.replicas],
      highWatermark: p.highWatermark,
    })),
  };
}

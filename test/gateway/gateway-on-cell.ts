/**
 * Test helpers for the gateway (not shipped API): a gateway app over a real in-process 3-broker
 * cell, with its topics created through the gateway's own API, so route tests start from the
 * same place and tear down in the same order.
 */
import { eventually, TestCell, type TestCellOptions } from '../helpers/cell.ts';
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { createGatewayApp, type GatewayApp, type GatewayDeps } from '../../src/gateway/index.ts';

/** A topic as POST /v1/topics takes it; replication factor 3 unless given. */
export interface TopicBody {
  name: string;
  partitions: number;
  replicationFactor?: number;
  config?: Record<string, string>;
}

/** How the test gateway starts. */
export interface GatewayOnCellOptions extends Omit<GatewayDeps, 'client'> {
  topics: readonly TopicBody[];
  /** Headers of the topic-creating requests (an admin key when auth is on). */
  adminHeaders?: Record<string, string>;
  /** Wait until /readyz answers 200 (every partition has a leader). Default true. */
  waitReady?: boolean;
  /** Options of the in-process cell (e.g. its brokers' group coordinator settings). */
  cell?: TestCellOptions;
}

/** Deadline for a new cell's partitions to all have leaders. */
const READY_TIMEOUT_MS = 15_000;

/** A gateway app, its client and the cell behind them. */
export class GatewayOnCell {
  private constructor(
    readonly cell: TestCell,
    readonly client: EdgeqClient,
    readonly app: GatewayApp,
  ) {}

  /** Starts the cell and the app, creates the topics (each must answer 201) and waits for readiness. */
  static async start(options: GatewayOnCellOptions): Promise<GatewayOnCell> {
    const { topics, adminHeaders = {}, waitReady = true, cell: cellOptions = {}, ...deps } = options;
    const cell = await new TestCell(cellOptions).start();
    const client = createClient({ brokers: cell.addresses() });
    const gw = new GatewayOnCell(cell, client, createGatewayApp({ client, ...deps }));
    for (const t of topics) {
      const res = await gw.app.request('/v1/topics', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...adminHeaders },
        body: JSON.stringify({ replicationFactor: 3, ...t }),
      });
      if (res.status !== 201) throw new Error(`creating topic ${t.name} answered ${res.status}: ${await res.text()}`);
    }
    if (waitReady) await eventually(async () => (await gw.app.request('/readyz')).status === 200, READY_TIMEOUT_MS, 'readyz');
    return gw;
  }

  /** Closes the app (its producers and consumers), the client and the cell. */
  async close(): Promise<void> {
    await this.app.close();
    await this.client.close();
    await this.cell.close();
  }
}

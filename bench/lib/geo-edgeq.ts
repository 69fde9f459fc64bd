/**
 * The edgeq side of the geo benchmark: a 2-region `edgeq dev` (one broker per region, every link
 * between the regions through the dev supervisor's link emulator, `latencyMs` one way), one global
 * topic per message size created at the origin's gateway, produced to at the origin's brokers with
 * the binary client (acks=all, idempotent) and read at the remote's brokers with the binary
 * consumer (in the reader process), which timestamps each record as it becomes readable there. Links change through the
 * dev control API (`PUT /v1/dev/links/{from}/{to}`).
 *
 * Written against the exchange's contract (issue 13): the remote region's log of a global topic
 * holds the origin's records, each carrying `originRegion`/`originOffset`. Without the exchange
 * nothing ever arrives at the remote, and the probe fails with `noArrivalHint`.
 */
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { EdgeqError } from '../../src/core/errors.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../../test/helpers/dev-process.ts';
import { waitUntil } from './harness.ts';
import type { ArrivalLog } from './geo-measure.ts';
import { startRemoteReader } from './geo-reader.ts';
import type { GeoChannel, GeoLinkChange, GeoSystem } from './geo-phases.ts';

/** How long the global topic gets to appear at the remote (the catalogue converges in ~2 s). */
const TOPIC_WAIT_MS = 30_000;

async function json(res: Response, what: string): Promise<unknown> {
  if (!res.ok) throw new EdgeqError('UNKNOWN', `${what}: HTTP ${res.status} ${await res.text()}`, { details: { status: res.status } });
  return res.json();
}

/** Starts the deployment and returns the system; `dataDir` is removed by the caller. */
export async function startEdgeqGeo(
  dataDir: string,
  latencyMs: number,
  options: { readAtOrigin?: boolean } = {},
): Promise<GeoSystem & { regions: { origin: string; remote: string; originBrokers: string; remoteBrokers: string; readAt: string } }> {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(dataDir, base, { regions: '2', brokersPerRegion: 1, wanLatencyMs: latencyMs });
  const clients: EdgeqClient[] = [];
  const close = async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stopAllDevs();
  };
  try {
    const ready = await dev.ready;
    const [a, b] = ready.regions as [(typeof ready.regions)[number], (typeof ready.regions)[number]];
    const origin = createClient({ brokers: a.brokers.split(','), clientId: 'geo-origin' });
    // readAtOrigin: a self-check of this harness (producer, reader, matching, link control)
    // while the exchange is missing: the "remote" reader reads the origin's own log. Its figures
    // measure no replication.
    const readBrokers = options.readAtOrigin ? a.brokers : b.brokers;
    clients.push(origin);
    // Throughput: batching (5 ms linger, large batches), as the produce bench does. Latency: no
    // linger, each record out at once as JetStream's publish does. Both acks=all, idempotent.
    const batching = origin.producer({ acks: 'all', idempotent: true, lingerMs: 5, batchBytesMax: 256 * 1024, bufferBytesMax: 256 * 1024 * 1024 });
    const quick = origin.producer({ acks: 'all', idempotent: true, lingerMs: 0 });
    const put = async (from: string, to: string, change: GeoLinkChange) =>
      json(await fetch(`${ready.control}/v1/dev/links/${from}/${to}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(change) }), `PUT link ${from}→${to}`);
    return {
      system: 'edgeq',
      origin: a.region,
      remote: b.region,
      noArrivalHint: `nothing of the global topic reached ${b.region}'s log: is the cross-region exchange of global topics (issue 13) in this build?`,
      regions: { origin: a.region, remote: b.region, originBrokers: a.brokers, remoteBrokers: b.brokers, readAt: options.readAtOrigin ? `${a.region} (self-check: no replication measured)` : b.region },
      async open(size: number, log: ArrivalLog): Promise<GeoChannel> {
        const topic = `geo-${size}`;
        await json(
          await fetch(`${a.gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: topic, partitions: 1, scope: 'global' }) }),
          `POST /v1/topics ${topic} at ${a.region}`,
        );
        const atRemote = await waitUntil(async () => ((await json(await fetch(`${b.gateway}/v1/topics`), 'GET /v1/topics')) as { topics: string[] }).topics.includes(topic), TOPIC_WAIT_MS, 100);
        if (!atRemote) throw new EdgeqError('TIMEOUT', `global topic ${topic} created at ${a.region} did not appear at ${b.region} within ${TOPIC_WAIT_MS} ms`, { details: { topic } });
        const reader = await startRemoteReader({ kind: 'edgeq', brokers: readBrokers.split(','), topic, originRegion: a.region }, log);
        return {
          publish: (payload) => batching.send(topic, { value: payload }),
          publishOne: (payload) => quick.send(topic, { value: payload }),
          readerError: () => reader.error(),
          close: () => reader.stop(),
        };
      },
      async setLink(change: GeoLinkChange): Promise<void> {
        await put(a.region, b.region, change);
        await put(b.region, a.region, change);
      },
      async bytesToRemote(): Promise<number> {
        const link = (await json(await fetch(`${ready.control}/v1/dev/links/${a.region}/${b.region}`), 'GET link')) as { bytesForwarded: number };
        return link.bytesForwarded;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

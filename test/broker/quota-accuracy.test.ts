// Proves a records/s quota holds at the broker within ±5% over a 10 s window, the first one, with
// eight concurrent producers of the client library (one connection each) asking for far more
// than the quota: each producer retries what the broker refuses after its throttle (KIP-219) and
// throttles itself adaptively, and the acknowledged records of the window stay within 5% of
// R·10 plus the burst. The broker is a real process; nothing is written for a refused request
// (the high watermark equals what was acknowledged).
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { parseQuota } from '../../ratelimit/index.ts';
import { spawnBroker } from '../helpers/broker-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

/** Records/s of the quota: well under what one broker takes on 2 loaded cores, so the quota, not the machine, binds. */
const R = 2_000;
const WINDOW_MS = 10_000;
const PRODUCERS = 8;
/** Sends each producer keeps outstanding: 8 × 64 outstanding single records ask for ~10x R. */
const OUTSTANDING = 64;
/** Client's delivery timeout: a refused send is retried after its throttle until this, so none fails. */
const DELIVERY_TIMEOUT_MS = 60_000;
/**
 * The test's bound, from its arithmetic rather than the default: broker start (up to 20 s on a
 * loaded machine) + the window + the sends outstanding when the window ends, each of which may
 * wait out its throttle up to the delivery timeout (measured 0.3-3.5 s unloaded, longer in CI,
 * where the default 60 s was once exceeded) + closing.
 */
const TEST_TIMEOUT_MS = 20_000 + WINDOW_MS + DELIVERY_TIMEOUT_MS + 10_000;

describe('quota accuracy at the broker', () => {
  it(`holds ${R} records/s within ±5% over the first ${WINDOW_MS / 1000} s window, with ${PRODUCERS} concurrent producers`, async () => {
    const proc = await spawnBroker({ dataDir: await tempDir() });
    const address = `127.0.0.1:${proc.port}`;
    const admin = createClient({ brokers: [address], clientId: 'admin' });
    const client = createClient({ brokers: [address], clientId: 'acme' });
    try {
      const quota = parseQuota('acme', 'acc', { recordsPerSec: R, bytesPerSec: 1e9 });
      await admin.admin().createTopics([{ name: 'acc', partitions: 4 }]);
      await admin.admin().putQuota(quota);
      const producers = Array.from({ length: PRODUCERS }, () => client.producer({ acks: 'all', lingerMs: 1, deliveryTimeoutMs: DELIVERY_TIMEOUT_MS }));
      await Promise.all(producers.map((p) => p.connect()));

      let acked = 0;
      let ackedLate = 0;
      let failed = 0;
      const t0 = performance.now();
      const endAt = t0 + WINDOW_MS;
      // Each producer keeps OUTSTANDING sends going until the window ends (bounded in count and time).
      await Promise.all(
        producers.map(async (p, pi) => {
          let n = 0;
          const lane = async () => {
            while (performance.now() < endAt && n < 1_000_000) {
              n++;
              try {
                await p.send('acc', { value: `p${pi}-${n}` });
                if (performance.now() <= endAt) acked++;
                else ackedLate++;
              } catch {
                failed++;
              }
            }
          };
          await Promise.all(Array.from({ length: OUTSTANDING }, lane));
        }),
      );
      const drainMs = Math.round(performance.now() - endAt);
      const expected = R * (WINDOW_MS / 1000) + quota.burstRecords;
      const deviation = (acked - expected) / (R * (WINDOW_MS / 1000));
      console.log(JSON.stringify({ quotaPerSec: R, windowMs: WINDOW_MS, producers: PRODUCERS, acked, expected, deviationPct: +(deviation * 100).toFixed(2), ackedAfterWindow: ackedLate, drainAfterWindowMs: drainMs, failed, throttle: producers.map((p) => p.throttleStats) }));
      expect(failed).toBe(0);
      expect(Math.abs(deviation)).toBeLessThanOrEqual(0.05);

      // Nothing refused was written: the log holds exactly what was acknowledged.
      await Promise.all(producers.map((p) => p.close()));
      const offsets = await admin.admin().listOffsets('acc');
      expect(offsets.reduce((s, o) => s + o.offset, 0)).toBe(acked + ackedLate);
    } finally {
      await client.close();
      await admin.close();
      await proc.kill('SIGTERM');
    }
  }, TEST_TIMEOUT_MS);
});

// Proves the local deployment (`edgeq dev`, what `npm start` runs) with real processes: it starts a gateway,
// an arbiter and three brokers and says where they are; a broker killed with SIGKILL is restarted
// by the supervisor and rejoins; SIGTERM stops every process (no orphans); starting again on the
// same data folder brings the topic and its records back. Every process logs to its own file.
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { eventually } from '../helpers/cell.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';
import { alive, freeRange, startDev, stopAllDevs } from '../helpers/dev-process.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

describe('edgeq dev', () => {
  it('runs a supervised cell, restarts a killed broker, stops cleanly and keeps data across restarts', async () => {
    const dataDir = await tempDir('edgeq-dev-');
    const base = await freeRange(10);
    let dev = startDev(dataDir, base, base + 3, base + 4);
    let ready = await dev.ready;
    expect(ready.processes.map((p) => p.name).sort()).toEqual(['us-east/arbiter', 'us-east/broker-1', 'us-east/broker-2', 'us-east/broker-3', 'us-east/gateway']);
    expect(ready.processes.map((p) => p.role).sort()).toEqual(['arbiter', 'broker', 'broker', 'broker', 'gateway']);
    expect(ready.gateway).toBe(`http://127.0.0.1:${base + 4}`);
    // Every service runs with the V8 flags of supervisor.ts (serviceNodeFlags), which only work on the command line.
    for (const p of ready.processes) {
      const argv = (await readFile(`/proc/${p.pid}/cmdline`, 'utf8')).split('\0');
      const script = argv.findIndex((a) => a.endsWith('bin/edgeq.js'));
      expect(argv.slice(1, script), `${p.name}'s node flags`).toEqual(expect.arrayContaining(['--no-memory-reducer', '--no-incremental-marking']));
    }
    expect((await fetch(`${ready.gateway}/healthz`)).status).toBe(200);
    // Each process's stdout (its log, its listening line) goes to its own file in the region's data folder.
    for (const name of ['arbiter', 'broker-1', 'gateway']) {
      expect(await readFile(`${dataDir}/us-east/logs/${name}.log`, 'utf8'), name).toContain('"event":"listening"');
    }
    // Every broker serves its Prometheus metrics.
    for (const url of ready.metrics) expect(await (await fetch(url)).text()).toContain('edgeq_produce_records_total');
    const client = createClient({ brokers: ready.brokers.split(','), metadataMaxAgeMs: 500 });
    try {
      await client.admin().createTopics([{ name: 'dev', partitions: 1, replicationFactor: 3 }]);
      const producer = client.producer({ acks: 'all' });
      for (let i = 0; i < 5; i++) await producer.send('dev', { value: `d${i}` });
      await producer.close();

      // SIGKILL broker 2: the supervisor restarts it and it is alive in the cell again.
      const victim = ready.processes.find((p) => p.name === 'us-east/broker-2')!.pid;
      process.kill(victim, 'SIGKILL');
      await eventually(async () => {
        const st = await client.admin().cellStatus().catch(() => null);
        const b2 = st?.brokers.find((b) => b.id === 2);
        return b2 !== undefined && b2.alive && b2.pid !== victim;
      }, 30_000, 'broker 2 to be restarted');
    } finally {
      await client.close();
    }
    const pids = ready.processes.map((p) => p.pid).filter((p) => p !== ready.processes.find((x) => x.name === 'us-east/broker-2')!.pid);
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
    for (const pid of pids) expect(alive(pid), `pid ${pid} still running`).toBe(false);

    // Again on the same folder: the records are back.
    dev = startDev(dataDir, base, base + 3, base + 4);
    ready = await dev.ready;
    const again = createClient({ brokers: ready.brokers.split(',') });
    try {
      const consumer = again.consumer({ fromBeginning: true, maxWaitMs: 100 });
      consumer.assign([{ topic: 'dev', partition: 0 }]);
      const seen: string[] = [];
      await eventually(async () => {
        seen.push(...(await consumer.poll({ timeoutMs: 300 })).map((r) => r.value!.toString()));
        return seen.length >= 5;
      }, 30_000, 'the records after a restart');
      expect(seen).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
      await consumer.close();
      // The gateway reads the same records over HTTP.
      const res = await fetch(`${ready.gateway}/v1/topics/dev/partitions/0/records?offset=0&maxRecords=10&waitMs=1000`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { records: { value: string }[] };
      expect(body.records.map((r) => r.value)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
    } finally {
      await again.close();
      dev.child.kill('SIGTERM');
      await dev.exited;
    }
  }, 180_000);
});

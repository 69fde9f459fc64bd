/**
 * The JetStream side of the geo benchmark: two `nats-server` processes in separate JetStream
 * domains ("a" and "b") joined by a leafnode that runs through the in-process link emulator
 * (src/wan), the same emulated WAN the edgeq regions use. Server A holds stream ORIGIN_<size>;
 * server B holds MIRRORCOPY_<size>, which *sources* it across the domains
 * (`external.api: "$JS.a.API"`). Publishes go to A with JetStream acks (the origin's ack); an
 * ordered consumer on B's stream, in the reader process, timestamps each record as it becomes
 * readable there.
 *
 * The servers are our own (free ports on 127.0.0.1, store folders under the run's temp folder,
 * config files written here), never the system one on :4222.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect as natsConnect, type NatsConnection } from 'nats';
import { LinkEmulator } from '../../src/wan/index.ts';
import { freePort, sleep } from './harness.ts';
import { tail } from './nats-cluster.ts';
import type { ArrivalLog } from './geo-measure.ts';
import { startRemoteReader } from './geo-reader.ts';
import type { GeoChannel, GeoLinkChange, GeoSystem } from './geo-phases.ts';

const NATS_BIN = process.env.NATS_SERVER ?? '/usr/sbin/nats-server';
/** How long a server gets to accept clients after its start. */
const START_WAIT_MS = 15_000;
/** How long a server gets to exit on SIGTERM before SIGKILL. */
const STOP_WAIT_MS = 5_000;
/** Log lines kept in the diagnostics. */
const DIAG_LINES_MAX = 20;

interface NatsServer {
  name: string;
  port: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<void>;
}

async function startServer(name: string, dir: string, config: (port: number) => string): Promise<NatsServer> {
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const logFile = join(dir, 'server.log');
  const confFile = join(dir, 'server.conf');
  await writeFile(confFile, `${config(port)}\nlog_file: "${logFile}"\n`);
  // Logs go to a file: an unread stderr pipe would fill up and stall the server.
  const child = spawn(NATS_BIN, ['-c', confFile], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => {
    child.on('exit', () => resolve());
    child.on('error', () => resolve());
  });
  const server = { name, port, logFile, child, exited };
  const deadline = performance.now() + START_WAIT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server ${name} exited with ${child.exitCode}: ${await tail(logFile)}`);
    try {
      const nc = await natsConnect({ servers: `127.0.0.1:${port}`, timeout: 500 });
      await nc.close();
      return server;
    } catch (err) {
      if (performance.now() > deadline) {
        await stopServer(server);
        throw new Error(`nats-server ${name} did not accept clients within ${START_WAIT_MS} ms: ${String(err)}`);
      }
      await sleep(100);
    }
  }
}

async function stopServer(s: NatsServer): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const t = setTimeout(() => s.child.kill('SIGKILL'), STOP_WAIT_MS);
  await s.exited;
  clearTimeout(t);
}

/** Starts A, B, the emulated link between them (`latencyMs` one way) and the clients. */
export async function startNatsGeo(root: string, latencyMs: number): Promise<GeoSystem & { servers: Record<string, number> }> {
  const emulator = new LinkEmulator({ defaults: { latencyMs } });
  const servers: NatsServer[] = [];
  const conns: NatsConnection[] = [];
  const close = async () => {
    await Promise.allSettled(conns.map((c) => c.close()));
    await Promise.allSettled(servers.map(stopServer));
    await emulator.close();
  };
  try {
    const leafPort = await freePort();
    // B reaches A's leafnode port only through its own end of the link b → a (replies: a → b).
    const route = await emulator.addRoute('b', 'a', { kind: 'tcp', target: `127.0.0.1:${leafPort}` });
    // A advertises the emulator's end as its leafnode address: a leaf learns the hub's advertised
    // URLs and reconnects to them. Without this, after a cut closed the leafnode (A's write
    // deadline, 10 s), B reconnected straight to A's real port, around the emulated link, and
    // caught up 30 MB of 1 KiB records over 6.6 MB of link bytes ("no_advertise" did not stop it).
    const a = await startServer('a', join(root, 'a'), (port) =>
      [
        `server_name: geo-a`,
        `listen: "127.0.0.1:${port}"`,
        `jetstream { store_dir: "${join(root, 'a', 'store')}", domain: a }`,
        `leafnodes { listen: "127.0.0.1:${leafPort}", advertise: "127.0.0.1:${route.port}" }`,
      ].join('\n'),
    );
    servers.push(a);
    const b = await startServer('b', join(root, 'b'), (port) =>
      [`server_name: geo-b`, `listen: "127.0.0.1:${port}"`, `jetstream { store_dir: "${join(root, 'b', 'store')}", domain: b }`, `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${route.port}" } ] }`].join('\n'),
    );
    servers.push(b);
    const ncA = await natsConnect({ servers: `127.0.0.1:${a.port}`, name: 'geo-origin' });
    conns.push(ncA);
    const ncB = await natsConnect({ servers: `127.0.0.1:${b.port}`, name: 'geo-remote' });
    conns.push(ncB);
    const jsmA = await ncA.jetstreamManager();
    const jsmB = await ncB.jetstreamManager();
    const jsA = ncA.jetstream();
    return {
      system: 'nats',
      origin: 'a',
      remote: 'b',
      noArrivalHint: `the leafnode b → a or the cross-domain source did not come up (logs: ${a.logFile}, ${b.logFile})`,
      servers: { a: a.port, b: b.port, aLeaf: leafPort, bLeafRemote: route.port },
      async open(size: number, log: ArrivalLog): Promise<GeoChannel> {
        const origin = `ORIGIN_${size}`;
        const copy = `MIRRORCOPY_${size}`;
        const subject = `geo.${size}`;
        await jsmA.streams.add({ name: origin, subjects: [subject], storage: 'file' as never, num_replicas: 1 });
        await jsmB.streams.add({ name: copy, storage: 'file' as never, num_replicas: 1, sources: [{ name: origin, external: { api: '$JS.a.API' } }] });
        const reader = await startRemoteReader({ kind: 'nats', server: `127.0.0.1:${b.port}`, stream: copy }, log);
        const publish = (payload: Buffer) => jsA.publish(subject, payload);
        return {
          publish,
          publishOne: publish,
          readerError: () => reader.error(),
          close: () => reader.stop(),
        };
      },
      async setLink(change: GeoLinkChange): Promise<void> {
        emulator.set('a', 'b', change);
        emulator.set('b', 'a', change);
      },
      async diagnostics(): Promise<Record<string, unknown>> {
        // Every leafnode connection made and lost: B's side names the address it connected to,
        // which must be the emulator's end (bLeafRemote), never A's own leafnode port.
        const leafEvents = async (file: string) =>
          (await readFile(file, 'utf8').catch(() => ''))
            .split('\n')
            .filter((l) => /Leafnode connection (created|closed)|Slow Consumer|leafnode/i.test(l))
            .map((l) => l.replace(/^\[\d+\] /, ''))
            .slice(0, DIAG_LINES_MAX);
        const atA = await leafEvents(a.logFile);
        const atB = await leafEvents(b.logFile);
        const leaf = atA;
        const links = emulator.links().map((l) => ({ from: l.from, to: l.to, bytesForwarded: l.bytesForwarded, bytesQueued: l.bytesQueued, connectionsOpen: l.connectionsOpen, connectionsFailed: l.connectionsFailed }));
        const aroundLink = atB.filter((l) => l.includes('Leafnode connection created') && !l.includes(`127.0.0.1:${route.port} `));
        return { leafnodeEventsAtA: atA, leafnodeEventsAtB: atB, leafnodeConnectionsAtA: leaf.filter((l) => l.includes('connection created')).length, leafnodeConnectionsAroundLink: aroundLink.length, links };
      },
      async bytesToRemote(): Promise<number> {
        return emulator.get('a', 'b')?.bytesForwarded ?? 0;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

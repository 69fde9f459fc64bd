/**
 * A JetStream cluster of `nats-server` processes on loopback for the benches: each node has its
 * own client port, route port, store folder and log file, a server name (JetStream clustering
 * needs one) and routes to the other nodes. `stop` ends every process (SIGTERM, then SIGKILL);
 * call it from a `finally`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect as natsConnect, type NatsConnection, type StreamConfig } from 'nats';
import { freePort, sleep } from './harness.ts';

/** One server of the cluster. */
export interface NatsNode {
  name: string;
  port: number;
  routePort: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<void>;
}

/** A running JetStream cluster. */
export interface NatsCluster {
  nodes: NatsNode[];
  /** `127.0.0.1:port` of every node. */
  servers: string[];
  /** The client port of the node named `name`. */
  portOf(name: string): number;
  /** Ends every server; safe to call more than once. */
  stop(): Promise<void>;
}

const NATS_BIN = process.env.NATS_SERVER ?? 'nats-server';

/** Starts `size` nats-server processes with JetStream, routed to one another as cluster `name`. */
export async function startNatsCluster(root: string, options: { size?: number; name?: string } = {}): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const clusterName = options.name ?? 'bench';
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ port: await freePort(), routePort: await freePort() })));
  const nodes: NatsNode[] = [];
  const stop = async () => {
    await Promise.all(
      nodes.map(async (n) => {
        if (n.child.exitCode !== null || n.child.signalCode !== null) return;
        n.child.kill('SIGTERM');
        const t = setTimeout(() => n.child.kill('SIGKILL'), 5_000);
        await n.exited;
        clearTimeout(t);
      }),
    );
  };
  try {
    for (let i = 0; i < size; i++) {
      const name = `n${i + 1}`;
      const dir = join(root, name);
      await mkdir(dir, { recursive: true });
      const { port, routePort } = ports[i]!;
      const routes = ports.filter((_, j) => j !== i).map((p) => `nats://127.0.0.1:${p.routePort}`);
      const logFile = join(dir, 'server.log');
      const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', join(dir, 'store'), '--server_name', name, '--cluster_name', clusterName];
      args.push('--cluster', `nats://127.0.0.1:${routePort}`, '--routes', routes.join(','), '-l', logFile);
      // Logs go to a file: an unread stderr pipe would fill up and stall the server.
      const child = spawn(NATS_BIN, args, { stdio: 'ignore' });
      const exited = new Promise<void>((resolve) => {
        child.on('exit', () => resolve());
        child.on('error', () => resolve());
      });
      nodes.push({ name, port, routePort, logFile, child, exited });
    }
    // Every node accepts clients: retry with a short backoff, bounded.
    for (const n of nodes) {
      const deadline = performance.now() + 15_000;
      for (;;) {
        if (n.child.exitCode !== null) throw new Error(`nats-server ${n.name} exited with ${n.child.exitCode}: ${await tail(n.logFile)}`);
        try {
          const nc = await natsConnect({ servers: `127.0.0.1:${n.port}`, timeout: 500 });
          await nc.close();
          break;
        } catch (err) {
          if (performance.now() > deadline) throw new Error(`nats-server ${n.name} did not accept clients: ${String(err)}`);
          await sleep(100);
        }
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes,
    servers: nodes.map((n) => `127.0.0.1:${n.port}`),
    portOf: (name) => {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no nats node ${name}`);
      return n.port;
    },
    stop,
  };
}

/**
 * Adds a stream, retrying while the cluster is not ready for it (the JetStream meta leader is
 * elected a few seconds after the servers start), up to `waitMs`.
 */
export async function addStreamWhenReady(nc: NatsConnection, config: Partial<StreamConfig> & { name: string }, waitMs = 30_000): Promise<void> {
  const deadline = performance.now() + waitMs;
  let pause = 100;
  for (;;) {
    try {
      // Inside the loop: getting the manager asks the JetStream API, which fails without a meta leader.
      const jsm = await nc.jetstreamManager({ timeout: 5_000 });
      await jsm.streams.add(config);
      return;
    } catch (err) {
      if (performance.now() > deadline) throw new Error(`stream ${config.name} could not be created within ${waitMs} ms: ${String(err)}`);
      await sleep(pause);
      pause = Math.min(pause * 2, 1_000);
    }
  }
}

/** The last lines of a log file, for error messages. */
export async function tail(file: string, lines = 10): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

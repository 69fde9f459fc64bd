/**
 * Starts real etcd servers (Debian's etcd-server, /usr/bin/etcd) on free loopback ports with
 * temporary data folders: one node for contract tests, or a cluster for quorum tests. Readiness
 * is etcd's own /health endpoint answering `"health":"true"` (which needs a quorum), polled with a
 * bounded deadline. Nodes are stopped by PID (SIGTERM, then SIGKILL) and can be restarted on the
 * same data folder and ports.
 *
 * The nodes run with a 50 ms heartbeat and a 500 ms election timeout: etcd's minimum lease TTL is
 * 1.5 election timeouts rounded up to a second, so 1 s leases are granted as 1 s (with the default
 * 1 s election timeout they would silently become 2 s), and a lost leader is replaced quickly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { tempDir } from './tmp.ts';
import { freePort } from './ports.ts';

export const ETCD_BIN = '/usr/bin/etcd';
/** The test nodes' raft election timeout (`--election-timeout`). */
export const ETCD_ELECTION_TIMEOUT_MS = 500;
/** Deadline for a node (or a cluster) to report healthy: etcd needs 0.4-1 s alone, more in a cluster. */
const HEALTHY_TIMEOUT_MS = 20_000;
/** How long a node gets to exit on SIGTERM before SIGKILL (it takes 1-2 s). */
const STOP_GRACE_MS = 5_000;
/** Tail of a node's stderr kept to explain a failure. */
const STDERR_BYTES_MAX = 16 * 1024;
const POLL_MS = 50;

/** Whether etcd is installed (scripts/test.sh installs it). */
export function etcdAvailable(): boolean {
  return existsSync(ETCD_BIN);
}

/** One etcd server process. */
export interface EtcdNode {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  /** PID of the running process, or null when stopped. */
  pid(): number | null;
  /** Stops the process by PID: SIGTERM, SIGKILL after a grace period (or `signal` directly). */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped node again on the same data folder and ports (does not wait for health). */
  restart(): Promise<void>;
  /** Resolves once this node answers /health with a quorum, or throws after `timeoutMs`. */
  waitHealthy(timeoutMs?: number): Promise<void>;
}

/** A running etcd cluster. */
export interface EtcdCluster {
  readonly nodes: EtcdNode[];
  /** Client URLs of every node, for `new EtcdArbiter({ hosts })`. */
  readonly endpoints: string[];
  /** Stops every node. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test that crashes must not leave etcd servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * TLS on the client port (`https://`, `--client-cert-auth`): etcd presents `certFile` and accepts
 * client certificates of `caFile` only. The health check presents the same certificate as a
 * client (the test CA's server certificates carry both usages). Peers stay plaintext.
 */
export interface EtcdTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

/** Options of the started etcd. */
export interface EtcdStartOptions {
  tls?: EtcdTlsFiles;
}

/** Starts a single-node etcd and waits until it is healthy. */
export async function startEtcd(options: EtcdStartOptions = {}): Promise<EtcdCluster> {
  return startEtcdCluster(1, options);
}

/** Starts an `size`-node etcd cluster on 127.0.0.1 and waits until every node is healthy. */
export async function startEtcdCluster(size: number, options: EtcdStartOptions = {}): Promise<EtcdCluster> {
  if (!etcdAvailable()) throw new Error(`${ETCD_BIN} not found: run scripts/test.sh or apt-get install etcd-server etcd-client`);
  const token = `edgeq-${process.pid}-${Date.now().toString(36)}`;
  const specs: { name: string; clientPort: number; peerPort: number; dataDir: string }[] = [];
  for (let i = 1; i <= size; i++) {
    specs.push({ name: `n${i}`, clientPort: await freePort(), peerPort: await freePort(), dataDir: await tempDir(`etcd-n${i}-`) });
  }
  const initialCluster = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peerPort}`).join(',');
  const nodes = specs.map((s) => makeNode(s, initialCluster, token, options.tls));
  for (const n of nodes) await n.restart();
  try {
    await Promise.all(nodes.map((n) => n.waitHealthy()));
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    throw err;
  }
  return {
    nodes,
    endpoints: nodes.map((n) => n.clientUrl),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** GET `url` over TLS presenting `tls`'s certificate; the status and body. */
function getTls(url: string, tls: EtcdTlsFiles, timeoutMs: number): Promise<{ ok: boolean; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(url, { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile), timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ ok: (res.statusCode ?? 0) < 300, text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

function makeNode(spec: { name: string; clientPort: number; peerPort: number; dataDir: string }, initialCluster: string, token: string, tls?: EtcdTlsFiles): EtcdNode {
  const clientUrl = `${tls ? 'https' : 'http'}://127.0.0.1:${spec.clientPort}`;
  const peerUrl = `http://127.0.0.1:${spec.peerPort}`;
  // On a restart etcd finds its data folder and ignores the initial-cluster flags.
  const args = [
    '--name', spec.name,
    '--data-dir', spec.dataDir,
    '--listen-client-urls', clientUrl,
    '--advertise-client-urls', clientUrl,
    '--listen-peer-urls', peerUrl,
    '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', initialCluster,
    '--initial-cluster-token', token,
    '--initial-cluster-state', 'new',
    '--heartbeat-interval', '50',
    '--election-timeout', String(ETCD_ELECTION_TIMEOUT_MS),
    '--logger', 'zap',
    '--log-outputs', 'stderr',
    '--log-level', 'warn',
    ...(tls ? ['--cert-file', tls.certFile, '--key-file', tls.keyFile, '--client-cert-auth', '--trusted-ca-file', tls.caFile] : []),
  ];
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  let stderrTail = '';
  const node: EtcdNode = {
    name: spec.name,
    clientUrl,
    peerUrl,
    dataDir: spec.dataDir,
    pid: () => child?.pid ?? null,
    restart: async () => {
      if (child) throw new Error(`etcd ${spec.name} is already running`);
      const c = spawn(ETCD_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      child = c;
      running.add(c);
      stderrTail = '';
      c.stderr!.on('data', (chunk: Buffer) => {
        stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_BYTES_MAX);
      });
      exited = new Promise<void>((resolve) =>
        c.once('exit', () => {
          running.delete(c);
          if (child === c) child = null;
          resolve();
        }),
      );
      await new Promise<void>((resolve, reject) => {
        c.once('spawn', resolve);
        c.once('error', reject);
      });
    },
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      const c = child;
      if (!c) return;
      const done = exited;
      c.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS)))]);
      clearTimeout(timer);
      if (child === c) {
        c.kill('SIGKILL');
        await done;
      }
    },
    waitHealthy: async (timeoutMs = HEALTHY_TIMEOUT_MS) => {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      while (Date.now() < deadline) {
        if (!child) throw new Error(`etcd ${spec.name} exited before becoming healthy: ${stderrTail}`);
        try {
          const res = tls ? await getTls(`${clientUrl}/health`, tls, 1_000) : await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
          last = typeof res.text === 'string' ? res.text : await res.text();
          if (res.ok && /"health":\s*"true"/.test(last)) return;
        } catch (err) {
          last = (err as Error).message;
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      throw new Error(`etcd ${spec.name} not healthy within ${timeoutMs} ms (last: ${last}); stderr: ${stderrTail}`);
    },
  };
  return node;
}


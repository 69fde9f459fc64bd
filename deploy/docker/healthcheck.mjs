// The image's HEALTHCHECK: one image runs every role, so this finds the edgeq process in the
// container, reads its command line and probes what that role serves:
//   gateway: GET /healthz on its HTTP port (--port, default 8080), over HTTPS when it serves TLS
//            (--tls-cert or EDGEQ_TLS_CERT)
//   broker:  GET /healthz on its admin port (--admin-port or EDGEQ_BROKER__ADMIN_PORT), else a TCP
//            connect to its protocol port (--port, default 9092) when the admin endpoint is off
//   arbiter: a TCP connect to its port (--port)
// EDGEQ_HEALTHCHECK_URL overrides all of it (an http URL to GET, or tcp://host:port to connect).
// Exit 0 healthy, 1 not (Docker's contract). Plain JavaScript with no dependencies, so it starts in
// ~40 ms; every probe is bounded by PROBE_TIMEOUT_MS, under the HEALTHCHECK's 3 s timeout.
import { readdirSync, readFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { connect } from 'node:net';

const PROBE_TIMEOUT_MS = 2_000;

/** argv of the process running bin/edgeq.js (PID 1 is tini), with its environment. */
function findEdgeq() {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    const at = argv.findIndex((a) => /bin\/edgeq(\.js)?$/.test(a));
    if (at < 0 || pid === String(process.pid)) continue;
    let env = {};
    try {
      env = Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    } catch {
      // Not readable: the flags alone decide.
    }
    return { args: argv.slice(at + 1), env };
  }
  return null;
}

/** The value of `--name v` or `--name=v` in args. */
function flag(args, name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}

/** A listening address reachable from inside the container (a wildcard bind answers on loopback). */
const local = (host) => (host === undefined || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);

async function httpOk(url) {
  if (url.startsWith('https:')) return httpsOk(url);
  const res = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
}

/**
 * GET over HTTPS without checking the certificate: this asks whether the process in this very
 * container answers on loopback (liveness), not who it is, and the gateway's certificate names
 * its public address and is signed by a CA this container need not trust (Kubernetes' own HTTPS
 * probes do not verify either).
 */
function httpsOk(url) {
  return new Promise((resolve, reject) => {
    const req = httpsGet(url, { rejectUnauthorized: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      if (res.statusCode >= 200 && res.statusCode < 300) resolve();
      else reject(new Error(`${url}: HTTP ${res.statusCode}`));
    });
    req.once('timeout', () => req.destroy(new Error(`${url}: no answer within ${PROBE_TIMEOUT_MS} ms`)));
    req.once('error', reject);
  });
}

function tcpOk(host, port) {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port: Number(port) });
    const timer = setTimeout(() => s.destroy(new Error(`${host}:${port}: no connection within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
    s.once('connect', () => {
      clearTimeout(timer);
      s.end();
      resolve();
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** What to probe for this container, as a URL (http: or tcp:). */
export function probeTarget(found, env = process.env) {
  if (env.EDGEQ_HEALTHCHECK_URL) return env.EDGEQ_HEALTHCHECK_URL;
  if (!found) throw new Error('no edgeq process in this container');
  const { args, env: penv } = found;
  const role = args[0];
  if (role === 'gateway') {
    const scheme = (flag(args, '--tls-cert') ?? penv.EDGEQ_TLS_CERT) ? 'https' : 'http';
    return `${scheme}://${local(flag(args, '--host'))}:${flag(args, '--port') ?? '8080'}/healthz`;
  }
  if (role === 'broker') {
    const admin = flag(args, '--admin-port') ?? penv.EDGEQ_BROKER__ADMIN_PORT;
    if (admin !== undefined && admin !== '0') return `http://${local(flag(args, '--admin-host') ?? penv.EDGEQ_BROKER__ADMIN_HOST)}:${admin}/healthz`;
    return `tcp://${local(flag(args, '--host') ?? penv.EDGEQ_BROKER__HOST)}:${flag(args, '--port') ?? penv.EDGEQ_BROKER__PORT ?? '9092'}`;
  }
  if (role === 'arbiter') return `tcp://127.0.0.1:${flag(args, '--port') ?? '0'}`;
  throw new Error(`no health probe for "edgeq ${role ?? ''}"`);
}

async function main() {
  const target = probeTarget(findEdgeq());
  if (target.startsWith('tcp://')) {
    const { hostname, port } = new URL(target);
    await tcpOk(hostname, port);
  } else {
    await httpOk(target);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`unhealthy: ${err.message}\n`);
      process.exit(1);
    },
  );
}

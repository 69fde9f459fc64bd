/**
 * A small process supervisor for the local deployment: starts `edgeq` subcommands as child
 * processes, waits for each one's JSON "listening" line, restarts a child that dies (with
 * backoff, a bounded number of times per minute), and stops them all in order on request.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { EdgeqError, edgeqBinPath, type Logger } from '../core/index.ts';
import { LogFile } from './log-file.ts';

const BIN = edgeqBinPath();

/** One supervised process. */
export interface ChildSpec {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** How long it may take to print its listening line. */
  startTimeoutMs?: number;
  /** Where its stdout (its log) is appended; without one the lines are read for the listening line and dropped. */
  logFile?: string;
}

/** Bounds of the supervisor. */
export interface SupervisorOptions {
  logger: Logger;
  /** Restarts allowed per child in a minute before the supervisor gives up on it. */
  restartsPerMinuteMax?: number;
  /** Grace between SIGTERM and SIGKILL when stopping. */
  stopTimeoutMs?: number;
  /** Wait before the first restart of a child that died; doubled for each recent restart (default 200). */
  restartDelayMs?: number;
}

interface Running {
  spec: ChildSpec;
  child: ChildProcess;
  exited: Promise<void>;
  info: Record<string, unknown>;
  restarts: number[];
}

/** Starts, watches and stops a set of child processes. */
export class Supervisor {
  private readonly children = new Map<string, Running>();
  private stopping = false;
  /** Children spawned and not yet ready (no listening line yet): `stop` kills these too. */
  private readonly starting = new Set<ChildProcess>();
  /** Children held down (`hold`): not restarted when they exit, until `release`. */
  private readonly held = new Set<string>();
  private readonly restartsPerMinuteMax: number;
  private readonly stopTimeoutMs: number;
  private readonly restartDelayMs: number;

  constructor(private readonly options: SupervisorOptions) {
    this.restartsPerMinuteMax = options.restartsPerMinuteMax ?? 5;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 15_000;
    this.restartDelayMs = options.restartDelayMs ?? 200;
  }

  /** Starts a child and resolves with its listening line once it printed it. */
  async start(spec: ChildSpec, restarts: number[] = []): Promise<Record<string, unknown>> {
    // Once stopping, nothing new is started: a child spawned now would outlive the supervisor.
    if (this.stopping) throw new EdgeqError('BROKER_NOT_AVAILABLE', `not starting ${spec.name}: the supervisor is stopping`, { details: { process: spec.name } });
    const child = spawn(process.execPath, [...serviceNodeFlags, ...childNodeArgs(), BIN, ...spec.args], {
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const log = spec.logFile ? new LogFile(spec.logFile) : null;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    this.starting.add(child);
    const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timeoutMs = spec.startTimeoutMs ?? 30_000;
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new EdgeqError('TIMEOUT', `${spec.name} did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      const lines = createInterface({ input: child.stdout! });
      // Closed when the child's stdout ends (after its exit, lines may still be in the pipe).
      lines.once('close', () => log?.close());
      lines.on('line', (line) => {
        log?.write(line);
        if (!line.startsWith('{')) return;
        try {
          const ev = JSON.parse(line) as Record<string, unknown>;
          if (ev.event === 'listening') {
            clearTimeout(timer);
            resolve(ev);
          }
        } catch {
          // not ours
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        this.starting.delete(child);
        reject(new EdgeqError('BROKER_NOT_AVAILABLE', `${spec.name} exited before it was ready (exit code ${child.exitCode ?? child.signalCode})`));
      });
    });
    this.starting.delete(child);
    const running: Running = { spec, child, exited, info, restarts };
    this.children.set(spec.name, running);
    void exited.then(() => this.onExit(running));
    return info;
  }

  /** Children and what they printed when ready; pid null while one is down (restarting or held). */
  status(): { name: string; pid: number | null; held: boolean; info: Record<string, unknown> }[] {
    return [...this.children.values()].map((r) => ({
      name: r.spec.name,
      pid: r.child.exitCode === null && r.child.signalCode === null ? (r.child.pid ?? null) : null,
      held: this.held.has(r.spec.name),
      info: r.info,
    }));
  }

  /**
   * Takes a child down and keeps it down (no restart) until `release`: what a fault needs that
   * acts on a stopped process (a power loss applied to its data folder, a corrupted segment).
   * Resolves once it has exited. NOT_FOUND for a name the supervisor does not run.
   */
  async hold(name: string, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    const r = this.children.get(name);
    if (!r) throw new EdgeqError('NOT_FOUND', `no process named ${name}`, { details: { process: name } });
    this.held.add(name);
    if (r.child.exitCode === null && r.child.signalCode === null) {
      r.child.kill(signal);
      const timer = setTimeout(() => r.child.kill('SIGKILL'), this.stopTimeoutMs);
      await r.exited;
      clearTimeout(timer);
    }
  }

  /** Starts a held child again and resolves once it is ready; a child not held is left as it is. */
  async release(name: string): Promise<void> {
    const r = this.children.get(name);
    if (!r) throw new EdgeqError('NOT_FOUND', `no process named ${name}`, { details: { process: name } });
    if (!this.held.delete(name)) return;
    // A restart of it may have been under way when it was held (its backoff sleep): the restart
    // checks `held` after the sleep, and a child already running again is left alone.
    if (r.child.exitCode === null && r.child.signalCode === null) return;
    await this.start(r.spec, r.restarts);
  }

  private async onExit(r: Running): Promise<void> {
    if (this.stopping || this.children.get(r.spec.name) !== r || this.held.has(r.spec.name)) return;
    const now = Date.now();
    const recent = r.restarts.filter((t) => now - t < 60_000);
    if (recent.length >= this.restartsPerMinuteMax) {
      this.options.logger.error({ child: r.spec.name, restarts: recent.length }, 'child keeps dying; not restarting it again');
      this.children.delete(r.spec.name);
      return;
    }
    const backoffMs = this.restartDelayMs * 2 ** recent.length;
    this.options.logger.warn({ child: r.spec.name, code: r.child.exitCode, signal: r.child.signalCode, backoffMs }, 'child died; restarting it');
    await new Promise((res) => setTimeout(res, backoffMs));
    if (this.stopping || this.held.has(r.spec.name) || this.children.get(r.spec.name) !== r) return;
    try {
      await this.start(r.spec, [...recent, now]);
      this.options.logger.info({ child: r.spec.name }, 'child restarted');
    } catch (err) {
      this.options.logger.error({ err, child: r.spec.name }, 'restart failed');
    }
  }

  /**
   * Stops the named children in order (SIGTERM, then SIGKILL after the grace), then the others,
   * including any still starting (a stop during start-up: Ctrl-C while the deployment comes up).
   */
  async stop(order: string[]): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.starting].map(async (child) => {
        const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), this.stopTimeoutMs);
        await exited;
        clearTimeout(timer);
      }),
    );
    const rest = [...this.children.keys()].filter((n) => !order.includes(n));
    for (const group of [...order.map((n) => [n]), rest]) {
      await Promise.all(
        group.map(async (name) => {
          const r = this.children.get(name);
          if (!r || r.child.exitCode !== null || r.child.signalCode !== null) return;
          r.child.kill('SIGTERM');
          const timer = setTimeout(() => r.child.kill('SIGKILL'), this.stopTimeoutMs);
          await r.exited;
          clearTimeout(timer);
        }),
      );
    }
    this.children.clear();
  }
}

/**
 * Node.js flags every supervised service runs with. They must be on the command line: V8 decides
 * them when it sets up the heap, so `v8.setFlagsFromString` in bin/edgeq.js comes too late (tried:
 * no effect). Both were found with `npm run profile:gateway`, which reports each process's GCs by
 * kind over the measured run; figures are protobuf batches of 100 records, acks=1, 2 cores.
 *
 * - `--no-memory-reducer`: when a process has allocated little for ~8 s, V8's memory reducer runs
 *   full GCs to shrink the heap and leaves the old-generation limit barely above the live size.
 *   When load came back, every process of the cell ran a mark-compact every ~70 ms (24 MB heaps,
 *   84-124 in 10 s), the longer the idle the worse: 5,600 req/s after 5 s idle, 3,000 after 25 s,
 *   2,200 after 60 s; with the flag 4,600 after 40 s, and the gateway ran no major GC.
 * - `--no-incremental-marking`: after a stretch of JSON batches the brokers' V8 kept starting
 *   incremental marking from its task with half the old-generation limit still free, and ran a
 *   mark-compact every 50-100 ms (100-135 in 10 s): 3,300 req/s and 0.10-0.18 ms of broker CPU per
 *   request; without incremental marking 5,400 req/s, 0.07 ms and 1-2 major GCs. The brokers' heaps
 *   are tens of MB (records live in buffers outside the heap), so an atomic full GC pauses for
 *   milliseconds; the protobuf produce p99 fell (42 to 18-22 ms in `npm run bench:gateway`).
 *
 * A broker is a long-running server whose load comes and goes; both defaults trade throughput for
 * a smaller footprint that it does not need. `nodejs_gc_duration_seconds` in /metrics shows the
 * pauses.
 */
export const serviceNodeFlags: readonly string[] = ['--no-memory-reducer', '--no-incremental-marking'];

/**
 * Extra Node.js flags for every child, from EDGEQ_CHILD_NODE_ARGS (whitespace-separated): how to
 * profile a running deployment (`--cpu-prof --cpu-prof-dir=DIR`), since Node refuses such flags
 * in NODE_OPTIONS.
 */
function childNodeArgs(): string[] {
  const raw = process.env.EDGEQ_CHILD_NODE_ARGS?.trim();
  return raw ? raw.split(/\s+/) : [];
}

/**
 * A small process supervisor for the local deployment: starts `edgeq` subcommands as child
 * processes, waits for each one's JSON "listening" line, restarts a child that dies (with
 * backoff, a bounded number of times per minute), and stops them all in order on request.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { EdgeqError, type Logger } from '../core/index.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

/** One supervised process. */
export interface ChildSpec {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** How long it may take to print its listening line. */
  startTimeoutMs?: number;
}

/** Bounds of the supervisor. */
export interface SupervisorOptions {
  logger: Logger;
  /** Restarts allowed per child in a minute before the supervisor gives up on it. */
  restartsPerMinuteMax?: number;
  /** Grace between SIGTERM and SIGKILL when stopping. */
  stopTimeoutMs?: number;
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
  private readonly restartsPerMinuteMax: number;
  private readonly stopTimeoutMs: number;

  constructor(private readonly options: SupervisorOptions) {
    this.restartsPerMinuteMax = options.restartsPerMinuteMax ?? 5;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 15_000;
  }

  /** Starts a child and resolves with its listening line once it printed it. */
  async start(spec: ChildSpec, restarts: number[] = []): Promise<Record<string, unknown>> {
    const child = spawn(process.execPath, [...childNodeArgs(), BIN, ...spec.args], {
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timeoutMs = spec.startTimeoutMs ?? 30_000;
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new EdgeqError('TIMEOUT', `${spec.name} did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
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
        reject(new EdgeqError('BROKER_NOT_AVAILABLE', `${spec.name} exited before it was ready (exit code ${child.exitCode ?? child.signalCode})`));
      });
    });
    const running: Running = { spec, child, exited, info, restarts };
    this.children.set(spec.name, running);
    void exited.then(() => this.onExit(running));
    return info;
  }

  /** Children and what they printed when ready. */
  status(): { name: string; pid: number; info: Record<string, unknown> }[] {
    return [...this.children.values()].map((r) => ({ name: r.spec.name, pid: r.child.pid ?? 0, info: r.info }));
  }

  private async onExit(r: Running): Promise<void> {
    if (this.stopping || this.children.get(r.spec.name) !== r) return;
    const now = Date.now();
    const recent = r.restarts.filter((t) => now - t < 60_000);
    if (recent.length >= this.restartsPerMinuteMax) {
      this.options.logger.error({ child: r.spec.name, restarts: recent.length }, 'child keeps dying; not restarting it again');
      this.children.delete(r.spec.name);
      return;
    }
    const backoffMs = 200 * 2 ** recent.length;
    this.options.logger.warn({ child: r.spec.name, code: r.child.exitCode, signal: r.child.signalCode, backoffMs }, 'child died; restarting it');
    await new Promise((res) => setTimeout(res, backoffMs));
    if (this.stopping) return;
    try {
      await this.start(r.spec, [...recent, now]);
      this.options.logger.info({ child: r.spec.name }, 'child restarted');
    } catch (err) {
      this.options.logger.error({ err, child: r.spec.name }, 'restart failed');
    }
  }

  /** Stops the named children in order (SIGTERM, then SIGKILL after the grace). */
  async stop(order: string[]): Promise<void> {
    this.stopping = true;
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
 * Extra Node.js flags for every child, from EDGEQ_CHILD_NODE_ARGS (whitespace-separated): how to
 * profile a running deployment (`--cpu-prof --cpu-prof-dir=DIR`), since Node refuses such flags
 * in NODE_OPTIONS.
 */
function childNodeArgs(): string[] {
  const raw = process.env.EDGEQ_CHILD_NODE_ARGS?.trim();
  return raw ? raw.split(/\s+/) : [];
}

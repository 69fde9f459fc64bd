/**
 * The fault driver of the local deployment (`edgeq dev`): links through its control API
 * (`PUT /v1/dev/links/{from}/{to}`), processes by signal to the pids the control API lists
 * (`GET /v1/dev/processes`; the supervisor runs on this machine, and restarts a killed child).
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { Deployment, DeploymentLink, DeploymentProcess, FaultDriver, LinkDegradation } from './driver.ts';

/** Bound on one control API call. */
export const CONTROL_CALL_MS = 5_000;
/** Bound on a release: it answers once the process is ready again (a broker replays its log first). */
export const RELEASE_CALL_MS = 60_000;

type Signal = 'SIGKILL' | 'SIGSTOP' | 'SIGCONT';

export class DevControlDriver implements FaultDriver {
  /** Links changed, with their settings before the first change (what heal puts back). */
  private readonly changedLinks = new Map<string, DeploymentLink>();
  /** Processes paused and not resumed yet, by pid. */
  private readonly paused = new Map<number, DeploymentProcess>();
  /** Processes held down and not released yet, by name. */
  private readonly heldDown = new Map<string, DeploymentProcess>();

  constructor(
    private readonly control: string,
    private readonly signal: (pid: number, signal: Signal) => void = (pid, s) => process.kill(pid, s),
  ) {}

  /** Checks the control API answers (a drill with no deployment reachable stops before injecting). */
  static async connect(control: string): Promise<DevControlDriver> {
    const d = new DevControlDriver(control);
    await d.processes();
    return d;
  }

  async deployment(): Promise<Deployment> {
    return (await this.call('GET', '/v1/dev/deployment')) as Deployment;
  }

  async processes(): Promise<DeploymentProcess[]> {
    return ((await this.call('GET', '/v1/dev/processes')) as { processes: DeploymentProcess[] }).processes;
  }

  async links(): Promise<DeploymentLink[]> {
    const links = ((await this.call('GET', '/v1/dev/links')) as { links: DeploymentLink[] }).links;
    return links.map((l) => ({ from: l.from, to: l.to, latencyMs: l.latencyMs, jitterMs: l.jitterMs, lossRate: l.lossRate, blackhole: l.blackhole }));
  }

  async kill(p: DeploymentProcess): Promise<void> {
    // A paused process that is killed dies paused; forget it (the supervisor starts a new one).
    if (p.pid !== null) this.paused.delete(p.pid);
    this.send(p, 'SIGKILL');
  }

  async hold(p: DeploymentProcess, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    if (p.pid !== null) this.paused.delete(p.pid);
    this.heldDown.set(p.name, p);
    await this.call('POST', `/v1/dev/processes/${p.name.split('/').map(encodeURIComponent).join('/')}/hold`, { signal });
  }

  async release(p: DeploymentProcess): Promise<void> {
    await this.call('POST', `/v1/dev/processes/${p.name.split('/').map(encodeURIComponent).join('/')}/release`);
    this.heldDown.delete(p.name);
  }

  async pause(p: DeploymentProcess): Promise<void> {
    this.send(p, 'SIGSTOP');
    this.paused.set(p.pid!, p);
  }

  async resume(p: DeploymentProcess): Promise<void> {
    this.send(p, 'SIGCONT');
    this.paused.delete(p.pid!);
  }

  async blackhole(a: string, b: string, on: boolean): Promise<void> {
    for (const [from, to] of [[a, b], [b, a]] as const) {
      await this.remember(from, to);
      await this.setLink(from, to, { blackhole: on });
    }
  }

  async degrade(from: string, to: string, settings: LinkDegradation | null): Promise<void> {
    if (settings === null) {
      const before = this.changedLinks.get(`${from}>${to}`);
      if (before) await this.restore(before);
      return;
    }
    await this.remember(from, to);
    await this.setLink(from, to, { ...settings });
  }

  async healAll(): Promise<void> {
    const failures: string[] = [];
    for (const p of [...this.paused.values()]) {
      try {
        await this.resume(p);
      } catch (err) {
        failures.push(`resume ${p.name}: ${(err as Error).message}`);
      }
    }
    for (const p of [...this.heldDown.values()]) {
      try {
        await this.release(p);
      } catch (err) {
        failures.push(`release ${p.name}: ${(err as Error).message}`);
      }
    }
    for (const before of [...this.changedLinks.values()]) {
      try {
        await this.restore(before);
      } catch (err) {
        failures.push(`link ${before.from}->${before.to}: ${(err as Error).message}`);
      }
    }
    if (failures.length > 0) throw new EdgeqError('UNKNOWN', `could not heal everything: ${failures.join('; ')}`, { details: { failures } });
  }

  // ---------------------------------------------------------------------------------------------

  private send(p: DeploymentProcess, signal: Signal): void {
    if (p.pid === null) throw new EdgeqError('INVALID_ARGUMENT', `${p.name} is not running (the supervisor is restarting it)`, { details: { process: p.name } });
    try {
      this.signal(p.pid, signal);
    } catch (err) {
      // ESRCH: it died meanwhile (the supervisor restarts it): not ours to fail on for a kill.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH' || signal !== 'SIGKILL') throw err;
    }
  }

  private async remember(from: string, to: string): Promise<void> {
    const key = `${from}>${to}`;
    if (this.changedLinks.has(key)) return;
    const link = (await this.links()).find((l) => l.from === from && l.to === to);
    if (!link) throw new EdgeqError('NOT_FOUND', `no link from ${from} to ${to}`, { details: { from, to } });
    this.changedLinks.set(key, link);
  }

  private async restore(before: DeploymentLink): Promise<void> {
    await this.setLink(before.from, before.to, { latencyMs: before.latencyMs, jitterMs: before.jitterMs, lossRate: before.lossRate, blackhole: before.blackhole });
    this.changedLinks.delete(`${before.from}>${before.to}`);
  }

  private async setLink(from: string, to: string, body: Record<string, unknown>): Promise<void> {
    await this.call('PUT', `/v1/dev/links/${encodeURIComponent(from)}/${encodeURIComponent(to)}`, body);
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.control}${path}`, {
        method,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(path.endsWith('/release') ? RELEASE_CALL_MS : CONTROL_CALL_MS),
      });
    } catch (err) {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `no deployment control API answers at ${this.control} (${(err as Error).message})`, { cause: err, details: { control: this.control } });
    }
    const text = await res.text();
    if (!res.ok) throw new EdgeqError(res.status === 404 ? 'NOT_FOUND' : 'INVALID_ARGUMENT', `${method} ${path}: ${res.status} ${text.slice(0, 300)}`, { details: { status: res.status } });
    return text === '' ? null : (JSON.parse(text) as unknown);
  }
}

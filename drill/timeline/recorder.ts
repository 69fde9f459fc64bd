/**
 * Polls every region's gateway during a drill (`/v1/mesh`, `/v1/cell`, `/v1/limiter`), diffs each
 * snapshot with the one before (events.ts) and keeps the timeline, with the drill's own phases
 * marked in it. Bounded: one poll per region in flight, TIMELINE_EVENTS_MAX events kept (the
 * rest counted), each call bounded by POLL_CALL_MS.
 */
import { diffSnapshots, type RegionSnapshot, type TimelineEvent } from './events.ts';

/** How often each region is polled. */
export const POLL_EVERY_MS_DEFAULT = 250;
/** Bound on one call to a gateway: a region that does not answer in it reads as unreachable (3 s: a loaded gateway answering /v1/cell while a broker is down took over 1.5 s). */
export const POLL_CALL_MS = 3_000;
/** Events kept; later ones are counted in `dropped()`. */
export const TIMELINE_EVENTS_MAX = 10_000;

export interface TimelineRecorderOptions {
  readonly gateways: readonly { readonly region: string; readonly url: string }[];
  readonly apiKey?: string | null;
  readonly everyMs?: number;
  readonly now?: () => number;
  /** The HTTP client (tests answer with a fake gateway). */
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>;
}

export class TimelineRecorder {
  private readonly events: TimelineEvent[] = [];
  private readonly last = new Map<string, RegionSnapshot>();
  /** The last members and partitions each region's gateway answered with. */
  private readonly lastGood = new Map<string, Pick<RegionSnapshot, 'members' | 'partitions'>>();
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private droppedEvents = 0;
  private readonly now: () => number;

  constructor(private readonly o: TimelineRecorderOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Starts polling every region (a first snapshot each, then one per interval). */
  start(): void {
    for (const g of this.o.gateways) {
      let busy = false;
      const tick = async () => {
        if (busy || this.stopped) return;
        busy = true;
        try {
          await this.pollOnce(g.region, g.url);
        } finally {
          busy = false;
        }
      };
      void tick();
      this.timers.push(setInterval(() => void tick(), this.o.everyMs ?? POLL_EVERY_MS_DEFAULT));
    }
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** Marks a drill phase (`fault`, `heal`, …) in the timeline. */
  mark(event: string, detail: string, region = ''): void {
    this.push({ t: this.now(), event, detail, region });
  }

  /** The timeline so far, in time order. */
  timeline(): TimelineEvent[] {
    return [...this.events].sort((a, b) => a.t - b.t);
  }

  dropped(): number {
    return this.droppedEvents;
  }

  /** One snapshot of a region, diffed with its last (exposed for tests). */
  async pollOnce(region: string, url: string): Promise<RegionSnapshot> {
    const t = this.now();
    const [mesh, cell, limiter] = await Promise.all([this.get(`${url}/v1/mesh`), this.get(`${url}/v1/cell`), this.get(`${url}/v1/limiter`)]);
    const snap: RegionSnapshot = {
      region,
      t,
      members: mesh ? Object.fromEntries((mesh as { members: { member: string; region: string; state: string }[] }).members.map((m) => [m.member, { region: m.region, state: m.state }])) : null,
      partitions: cell
        ? Object.fromEntries((cell as { partitions: { topic: string; partition: number; leaderId: number; leaderEpoch: number; isr: number[] }[] }).partitions.map((p) => [`${p.topic}/${p.partition}`, { leader: p.leaderId >= 0 ? p.leaderId : null, epoch: p.leaderEpoch, isr: p.isr }]))
        : null,
      capacityPerSec: limiter ? ((limiter as { capacityPerSec: number | null }).capacityPerSec ?? null) : null,
    };
    // A poll where one of the calls failed (a slow answer while a broker is down) must not lose
    // the changes around it: the part that failed is taken from the last poll that had it, and
    // after a stretch where the gateway answered nothing, the changes made meanwhile are diffed
    // against the last good view.
    const good = this.lastGood.get(region) ?? { members: null, partitions: null };
    const reachable = snap.members !== null || snap.partitions !== null;
    const filled: RegionSnapshot = reachable ? { ...snap, members: snap.members ?? good.members, partitions: snap.partitions ?? good.partitions } : snap;
    const before = this.last.get(region) ?? null;
    for (const e of diffSnapshots(before, filled)) this.push(e);
    if (before !== null && before.members === null && before.partitions === null && reachable) {
      for (const e of diffSnapshots({ ...filled, ...good, t: before.t }, filled)) if (!e.event.startsWith('region.')) this.push(e);
    }
    if (reachable) this.lastGood.set(region, { members: filled.members, partitions: filled.partitions });
    this.last.set(region, filled);
    return filled;
  }

  private push(e: TimelineEvent): void {
    if (this.events.length >= TIMELINE_EVENTS_MAX) {
      this.droppedEvents++;
      return;
    }
    this.events.push(e);
  }

  private async get(url: string): Promise<unknown | null> {
    try {
      const res = await (this.o.fetch ?? fetch)(url, { headers: this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}, signal: AbortSignal.timeout(POLL_CALL_MS) });
      if (!res.ok) {
        await res.body?.cancel();
        return null;
      }
      return (await res.json()) as unknown;
    } catch {
      return null;
    }
  }
}

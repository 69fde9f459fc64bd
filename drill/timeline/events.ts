/**
 * The drill's timeline (issue 16): what changed in the deployment while a fault was on, from
 * successive snapshots of each region's gateway (`/v1/mesh` member states, `/v1/cell` leaders and
 * ISRs, `/v1/limiter` capacity). Pure: a snapshot and the one before it give the events between
 * them, so the diffing is tested without a deployment and the poller only fetches.
 */

/** One event of the timeline (the report's `timeline` entries). */
export interface TimelineEvent {
  /** Epoch ms when the snapshot that showed it was taken. */
  readonly t: number;
  /** `mesh.member`, `cell.leader`, `cell.isr`, `limiter.capacity`, `region.unreachable`, `region.reachable`, or a drill phase (`fault`, `heal`, …). */
  readonly event: string;
  readonly detail: string;
  /** The region whose gateway saw it. */
  readonly region: string;
}

/** What one region's gateway showed at one moment (null parts: that endpoint did not answer). */
export interface RegionSnapshot {
  readonly region: string;
  readonly t: number;
  /** member id → state, as this region's mesh agent sees it. */
  readonly members: Readonly<Record<string, { region: string; state: string }>> | null;
  /** `topic/partition` → leader id and ISR. */
  readonly partitions: Readonly<Record<string, { leader: number | null; epoch: number; isr: readonly number[] }>> | null;
  /** The limiter's capacity (records/s), null without one. */
  readonly capacityPerSec: number | null;
}

/** Capacity changes smaller than this fraction are not events (the gradient law moves 5% a second). */
export const CAPACITY_CHANGE_MIN = 0.2;

/** The events between two snapshots of one region (`before` null: the first snapshot, no events). */
export function diffSnapshots(before: RegionSnapshot | null, after: RegionSnapshot): TimelineEvent[] {
  if (before === null) return [];
  const out: TimelineEvent[] = [];
  const at = (event: string, detail: string) => out.push({ t: after.t, event, detail, region: after.region });
  const reachable = (s: RegionSnapshot) => s.members !== null || s.partitions !== null;
  if (reachable(before) && !reachable(after)) at('region.unreachable', `${after.region}'s gateway does not answer`);
  if (!reachable(before) && reachable(after)) at('region.reachable', `${after.region}'s gateway answers again`);
  if (before.members && after.members) {
    for (const [id, m] of Object.entries(after.members)) {
      const was = before.members[id]?.state;
      if (was !== m.state) at('mesh.member', `${id} (${m.region}): ${was ?? 'new'} → ${m.state}`);
    }
  }
  if (before.partitions && after.partitions) {
    for (const [key, p] of Object.entries(after.partitions)) {
      const was = before.partitions[key];
      if (!was) continue;
      if (was.leader !== p.leader || was.epoch !== p.epoch) at('cell.leader', `${key}: leader ${was.leader ?? 'none'} → ${p.leader ?? 'none'} (epoch ${was.epoch} → ${p.epoch})`);
      const a = [...was.isr].sort((x, y) => x - y).join(',');
      const b = [...p.isr].sort((x, y) => x - y).join(',');
      if (a !== b) at('cell.isr', `${key}: ISR [${a}] → [${b}]`);
    }
  }
  const c0 = before.capacityPerSec;
  const c1 = after.capacityPerSec;
  if (c0 !== null && c1 !== null && c0 > 0 && Math.abs(c1 - c0) / c0 >= CAPACITY_CHANGE_MIN) at('limiter.capacity', `${Math.round(c0)} → ${Math.round(c1)} records/s`);
  return out;
}

/**
 * Time to detect a fault: the first event at or after `faultAt` that is a detection of the kind
 * given (a member of `region` marked suspect or dead, or a new leader), in ms after the fault;
 * null when none came.
 */
export function detectMs(timeline: readonly TimelineEvent[], faultAt: number, kind: { leader: true } | { memberOf: string }): number | null {
  for (const e of timeline) {
    if (e.t < faultAt) continue;
    if ('leader' in kind && e.event === 'cell.leader') return e.t - faultAt;
    if ('memberOf' in kind && e.event === 'mesh.member' && e.detail.includes(`(${kind.memberOf}):`) && /→ (suspect|dead)$/.test(e.detail)) return e.t - faultAt;
  }
  return null;
}

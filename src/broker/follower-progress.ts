/**
 * What a partition leader knows of its followers: how far each has fetched, when it was last
 * caught up, and from that the high watermark and the ISR changes to propose.
 *
 * Only fetches that passed the leader's checks (epoch, replica membership, offset range) reach
 * here: a fetch offset is a claim by the follower that it holds everything below it, and the
 * high watermark and `acks=all` answers rest on those claims.
 */

/** One follower's progress as its fetches tell it. */
interface FollowerState {
  /** The follower's log end offset, as its last accepted fetch said (-1: no fetch yet). */
  logEndOffset: number;
  /** Last time the follower was known to hold everything the leader had then. */
  caughtUpAtMs: number;
  /** The leader's log end offset and the time at the follower's previous fetch. */
  prevFetchLeaderEnd: number;
  prevFetchAtMs: number;
}

/** The inputs of the ISR join rule at the moment of a fetch. */
export interface JoinRule {
  /** The leader's high watermark. */
  highWatermark: number;
  /** Where the leader's current epoch starts in its log. */
  epochStartOffset: number;
}

/** Follower progress of one leader term (cleared at every new term). */
export class FollowerProgress {
  private readonly byId = new Map<number, FollowerState>();

  /** Starts a new term: every follower gets a full lag window from `nowMs` to reach the leader. */
  reset(followerIds: readonly number[], nowMs: number): void {
    this.byId.clear();
    for (const id of followerIds) this.byId.set(id, { logEndOffset: -1, caughtUpAtMs: nowMs, prevFetchLeaderEnd: -1, prevFetchAtMs: nowMs });
  }

  clear(): void {
    this.byId.clear();
  }

  /** The follower's log end as last fetched, or -1. */
  logEndOf(id: number): number {
    return this.byId.get(id)?.logEndOffset ?? -1;
  }

  /**
   * Records an accepted fetch at `fetchOffset` when the leader's log ends at `leaderEnd`. Kafka's
   * caught-up rule: caught up now if it has everything; otherwise, if it has everything the leader
   * had at its previous fetch, it was caught up then. Under steady writes a healthy follower is
   * never exactly at the end, yet never falls behind either.
   */
  record(id: number, fetchOffset: number, leaderEnd: number, nowMs: number): void {
    const f = this.byId.get(id) ?? { logEndOffset: -1, caughtUpAtMs: nowMs, prevFetchLeaderEnd: -1, prevFetchAtMs: nowMs };
    f.logEndOffset = fetchOffset;
    if (fetchOffset >= leaderEnd) f.caughtUpAtMs = nowMs;
    else if (f.prevFetchLeaderEnd >= 0 && fetchOffset >= f.prevFetchLeaderEnd) f.caughtUpAtMs = Math.max(f.caughtUpAtMs, f.prevFetchAtMs);
    f.prevFetchLeaderEnd = leaderEnd;
    f.prevFetchAtMs = nowMs;
    this.byId.set(id, f);
  }

  /**
   * True when a follower outside the ISR may join it after fetching at `fetchOffset`: it must hold
   * the high watermark *and* everything of the current epoch's start (KAFKA-7128: a new leader's
   * high watermark can be stale-low, so the high watermark alone would let a replica join, and be
   * elected, that lacks acknowledged records of the previous epoch).
   */
  static mayJoin(fetchOffset: number, rule: JoinRule): boolean {
    return fetchOffset >= rule.highWatermark && fetchOffset >= rule.epochStartOffset;
  }

  /** ISR members other than `selfId` that have not caught up within `lagMsMax`. */
  lagging(isr: readonly number[], selfId: number, nowMs: number, lagMsMax: number): number[] {
    return isr.filter((id) => {
      if (id === selfId) return false;
      const f = this.byId.get(id);
      return !f || nowMs - f.caughtUpAtMs > lagMsMax;
    });
  }

  /**
   * The high watermark the ISR supports: the lowest log end over the ISR (the leader's own end
   * included), never below `current` (a high watermark only moves forward within a term).
   */
  highWatermark(isr: readonly number[], selfId: number, leaderEnd: number, current: number): number {
    let hw = leaderEnd;
    for (const id of isr) {
      if (id === selfId) continue;
      const f = this.byId.get(id);
      hw = Math.min(hw, f && f.logEndOffset >= 0 ? f.logEndOffset : current);
    }
    return Math.max(hw, current);
  }
}

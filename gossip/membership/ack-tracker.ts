/**
 * Acks awaited, by sequence number: this member's probes and the pings it forwards for others'
 * ping-reqs. Each waits a bounded time, then its timeout runs and it is forgotten; at most
 * `pendingMax` wait at once, so a flood of ping-reqs cannot grow it.
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';

/** What to do when an ack, a nack or the timeout comes. */
export interface AckHandler {
  onAck(): void;
  onNack?(): void;
  onTimeout?(): void;
}

interface Pending {
  handler: AckHandler;
  timer: TimerHandle;
}

/** Pending acks with their timeouts. */
export class AckTracker {
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly clock: Clock,
    private readonly pendingMax: number,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /** Waits up to `lifetimeMs` for `seq`; false (and nothing registered) when the bound is reached. */
  register(seq: number, lifetimeMs: number, handler: AckHandler): boolean {
    if (this.pending.size >= this.pendingMax || this.pending.has(seq)) return false;
    const timer = this.clock.setTimeout(() => {
      if (this.pending.get(seq)?.handler !== handler) return;
      this.pending.delete(seq);
      handler.onTimeout?.();
    }, lifetimeMs);
    this.pending.set(seq, { handler, timer });
    return true;
  }

  /** An ack for `seq`: runs its handler once; false when nothing waited for it. */
  ack(seq: number): boolean {
    const p = this.pending.get(seq);
    if (!p) return false;
    this.pending.delete(seq);
    p.timer.cancel();
    p.handler.onAck();
    return true;
  }

  /** A nack for `seq`; the wait goes on (other ping-req peers may still ack). */
  nack(seq: number): boolean {
    const p = this.pending.get(seq);
    if (!p) return false;
    p.handler.onNack?.();
    return true;
  }

  /** Forgets `seq` without running anything. */
  forget(seq: number): void {
    const p = this.pending.get(seq);
    if (!p) return;
    p.timer.cancel();
    this.pending.delete(seq);
  }

  /** Forgets everything (the agent stops). */
  clear(): void {
    for (const p of this.pending.values()) p.timer.cancel();
    this.pending.clear();
  }
}

/**
 * A broker's membership lease: it holds a lease (TTL `ttlMs`) and keeps its key `brokers/<id>`
 * bound to it, renewing every `keepAliveIntervalMs`. It says the broker may take writes only until
 * `marginMs` before the lease would run out without another renewal (Patroni's rule), counted from
 * when each renewal was sent, so a leader elected after the expiry never overlaps with this one.
 * When the arbiter says the lease is gone, the owner is told (everything led under it is someone
 * else's now) and the broker registers again under a new lease: a new incarnation.
 */
import { EdgeqError, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import type { Arbiter, Lease } from '../arbiter/index.ts';

/** Settings and callbacks of a LeaseKeeper. */
export interface LeaseKeeperOptions {
  arbiter: Arbiter;
  clock: Clock;
  logger: Logger;
  /** The membership key bound to the lease, and its value (read when written). */
  key: () => string;
  value: () => Buffer;
  ttlMs: number;
  keepAliveIntervalMs: number;
  marginMs: number;
  /** The lease is gone; called before registering again. */
  onLost(): void;
  /** Registered under a new lease; `revision` is the write of the membership key. */
  onRegistered(revision: number): void;
  /** After every renewal attempt, successful or not: the controller's periodic tick. */
  onTick(): void;
}

/** Holds and renews one broker's lease. */
export class LeaseKeeper {
  private lease: Lease | null = null;
  /** The membership key is bound to `lease`; false after a loss until a registration completes. */
  private registered = false;
  private validUntilMs = -Infinity;
  private timer: TimerHandle | null = null;
  private closed = false;

  constructor(private readonly o: LeaseKeeperOptions) {
    if (o.marginMs + o.keepAliveIntervalMs >= o.ttlMs) {
      throw new EdgeqError('INVALID_CONFIG', `leaseSafetyMarginMs (${o.marginMs}) + keepAliveIntervalMs (${o.keepAliveIntervalMs}) must be below leaseTtlMs (${o.ttlMs})`, {
        details: { key: 'cell.leaseTtlMs' },
      });
    }
  }

  /** True while the lease is valid with the safety margin. */
  valid(): boolean {
    return !this.closed && this.o.clock.monotonicMs() < this.validUntilMs - this.o.marginMs;
  }

  /** Grants a lease and binds the membership key to it; resolves with the key's revision. */
  async register(): Promise<number> {
    const t0 = this.o.clock.monotonicMs();
    const lease = await this.o.arbiter.grantLease(this.o.ttlMs);
    let revision: number;
    try {
      revision = await this.o.arbiter.put(this.o.key(), this.o.value(), { leaseId: lease.id });
    } catch (err) {
      // A lease without the key would be renewed for nothing: give it back and try again later.
      await lease.revoke().catch(() => undefined);
      throw err;
    }
    this.lease = lease;
    this.registered = true;
    this.validUntilMs = t0 + lease.ttlMs;
    this.o.logger.info({ leaseTtlMs: lease.ttlMs, revision }, 'registered in the cell');
    this.o.onRegistered(revision);
    return revision;
  }

  /** Writes the membership key again under the current lease (a barrier for the watch); resolves with its revision. */
  async refreshKey(): Promise<number> {
    if (!this.lease || !this.registered) throw new EdgeqError('LEASE_EXPIRED', 'not registered');
    return this.o.arbiter.put(this.o.key(), this.o.value(), { leaseId: this.lease.id });
  }

  /** Starts renewing. */
  start(): void {
    this.schedule();
  }

  /** Stops renewing and revokes the lease, handing everything over at once instead of after the TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    await this.lease?.revoke().catch(() => undefined);
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = this.o.clock.setTimeout(() => void this.renew(), this.o.keepAliveIntervalMs);
  }

  private async renew(): Promise<void> {
    if (!this.registered) {
      await this.tryRegister();
    } else {
      const t0 = this.o.clock.monotonicMs();
      try {
        const ttl = await this.lease!.keepAliveOnce();
        // Counted from when the renewal was sent: the arbiter's clock started no earlier.
        this.validUntilMs = t0 + ttl;
      } catch (err) {
        const e = toEdgeqError(err);
        if (e.code === 'LEASE_EXPIRED' && !this.closed) {
          this.o.logger.warn("lease expired: registering again (partitions led before are someone else's now)");
          this.registered = false;
          this.validUntilMs = -Infinity;
          this.o.onLost();
          await this.tryRegister();
        } else {
          this.o.logger.warn({ code: e.code, validForMs: Math.round(this.validUntilMs - this.o.clock.monotonicMs()) }, 'lease renewal failed');
        }
      }
    }
    if (this.closed) return;
    this.o.onTick();
    this.schedule();
  }

  private async tryRegister(): Promise<void> {
    if (this.closed) return;
    try {
      await this.register();
    } catch (err) {
      this.o.logger.warn({ code: toEdgeqError(err).code }, 'could not register again; retrying');
    }
  }
}

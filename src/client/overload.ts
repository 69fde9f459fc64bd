/**
 * How the producer backs off from an overloaded broker, before the broker has to refuse:
 *
 * - **Overload refusals** (QUOTA_EXCEEDED: a quota at the broker; TEMPORARY_REDUCED_CAPACITY: a
 *   load controller's cut; THROTTLED: refused here, or a throttle outlasting a request's timeout)
 *   mean "later", not "broken": retried after the broker's throttle time, and not counted
 *   against the retry limit (the delivery timeout bounds them), since nothing was written.
 * - **Adaptive throttling** (Google SRE book, "Handling Overload", K = 2; ratelimit/): per broker,
 *   the requests sent and the ones the broker accepted over the last two minutes; a new request
 *   is refused here with probability max(0, (requests − K·accepts) / (requests + 1)), capped at
 *   REJECT_PROBABILITY_MAX (0.8: no client is locked out of a shared quota), so a client
 *   the broker keeps refusing sends a falling share of what it would, and goes back to sending
 *   everything once the broker accepts again. Refused here: THROTTLED, retriable.
 */
import { EdgeqError, type Clock, type ErrorCode } from '../core/index.ts';
import { AdaptiveThrottle, ADAPTIVE_K } from '../../ratelimit/index.ts';

/** Codes that mean the broker is (or was about to be) overloaded: retry later, nothing was written. */
const OVERLOAD_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['QUOTA_EXCEEDED', 'TEMPORARY_REDUCED_CAPACITY', 'THROTTLED']);

/** True for an overload refusal (see the file comment). */
export function isOverloadError(err: EdgeqError): boolean {
  return OVERLOAD_CODES.has(err.code);
}

/**
 * Brokers with a throttle of their own: one per broker id the metadata names, so this bounds a
 * client that sees a cell of absurd size rather than any real one (each is ~2 KiB).
 */
export const BROKER_THROTTLES_MAX = 1024;

/** Options of the adaptive throttle: `false` turns it off. */
export interface AdaptiveThrottleOptions {
  /** The SRE book's K (default 2): the client sends up to K times what the broker accepts. */
  k?: number;
  /** Returns a number in [0, 1); injected so tests can pin the draws. */
  random?: () => number;
}

/** The adaptive throttles of one producer, one per broker. */
export class BrokerThrottles {
  private readonly byBroker = new Map<number, AdaptiveThrottle>();
  private readonly k: number;
  /** Requests decided (sent or refused here) and refused here, since the producer started. */
  requests = 0;
  rejectedLocally = 0;

  constructor(
    private readonly clock: Clock,
    private readonly random: () => number,
    options: AdaptiveThrottleOptions = {},
  ) {
    this.k = options.k ?? ADAPTIVE_K;
    if (!(this.k >= 1 && Number.isFinite(this.k))) throw new EdgeqError('INVALID_CONFIG', `adaptiveThrottle.k must be a number >= 1, got ${this.k}`, { details: { key: 'adaptiveThrottle.k' } });
  }

  /** Decides on a request to `brokerId`: true = send it, false = refuse it here. */
  admit(brokerId: number): boolean {
    this.requests++;
    const ok = this.of(brokerId).admit();
    if (!ok) this.rejectedLocally++;
    return ok;
  }

  /** The broker answered a request without refusing it as overloaded. */
  accepted(brokerId: number): void {
    this.of(brokerId).accepted();
  }

  private of(brokerId: number): AdaptiveThrottle {
    let t = this.byBroker.get(brokerId);
    if (!t) {
      if (this.byBroker.size >= BROKER_THROTTLES_MAX) this.byBroker.delete(this.byBroker.keys().next().value as number);
      t = new AdaptiveThrottle(this.clock, this.random, this.k);
      this.byBroker.set(brokerId, t);
    }
    return t;
  }
}

/** The error of a request refused here. */
export function locallyThrottled(brokerId: number): EdgeqError {
  return new EdgeqError('THROTTLED', `broker ${brokerId} refused most recent requests: this one was held back here (adaptive throttling)`, { details: { brokerId, local: true } });
}

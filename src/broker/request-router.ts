/**
 * Turns a request frame into a response frame: finds the API, checks the version, decodes the
 * body, runs the handler and encodes its answer. Failures of the request as a whole (unknown API,
 * unsupported version, a body that does not decode, a handler throwing) become ERROR frames with
 * a typed code; they never reach the socket as exceptions.
 */
import { toEdgeqError, type Logger } from '../core/index.ts';
import {
  apiSpec,
  decodeBody,
  encodeErrorResponse,
  encodeFrame,
  encodeMessage,
  FLAG_RESPONSE,
  type ApiName,
  type Frame,
  type RequestOf,
  type ResponseOf,
} from '../protocol/index.ts';
import { EdgeqError } from '../core/index.ts';
import { authorizeRequest } from './authorizer.ts';
import type { BinaryPrincipal, BrokerAuth } from './broker-auth.ts';

/** What a handler knows about the connection it serves. */
export interface RequestContext {
  clientId: string;
  host: string;
  /**
   * This connection's number, unique in the broker process: state a client keeps across its
   * requests (fetch sessions) is scoped by it, so two clients that pick the same name never share it.
   */
  readonly connectionId: number;
  /**
   * Calls `listener` once when the connection closes (at once if it has), so long polls stop
   * waiting; returns the function that removes it. Not a promise: a `.then` on a promise that
   * settles only at close stays attached after the poll is over, and a replica connection serves
   * thousands of fetches a second for days. Not an AbortSignal either: its listeners cost a
   * broker a fifth of its CPU at that rate (measured, Node 20).
   */
  onClose(listener: () => void): () => void;
  /**
   * Milliseconds the connection is still throttled (KIP-219): a fetch answers it so a consumer
   * sharing a throttled connection holds off too. Absent: never throttled.
   */
  throttleRemainingMs?(): number;
  /** Mutes the connection for `ms` now: for a refused request that gets no response (acks=0). */
  mute?(ms: number): void;
  /**
   * Who the connection authenticated as: set by a verified client certificate when it connected,
   * or by Authenticate. Absent/null: not authenticated (with auth on, only ApiVersions and
   * Authenticate are answered then).
   */
  principal?: BinaryPrincipal | null;
}

/** What routing one frame said beside its response: the throttle it carried (0: none). */
export interface RouteOutcome {
  throttleMs: number;
}

/** A handler answers with a response body, or null to send nothing (produce with acks=0). */
export type Handler<N extends ApiName> = (req: RequestOf<N>, ctx: RequestContext) => Promise<ResponseOf<N> | null>;

/** One handler per API the broker serves. */
export type Handlers = { [N in ApiName]: Handler<N> };

/** Routes frames to handlers. */
export class RequestRouter {
  constructor(
    private readonly handlers: Handlers,
    private readonly logger: Logger,
    /** Checks each request's grants before its handler (src/broker/authorizer.ts); null: auth off, nothing checked. */
    private readonly auth: BrokerAuth | null = null,
  ) {}

  /**
   * The response frame for `frame`, or null when none is due. A response carrying a throttle
   * (`throttleMs` > 0: Produce and Fetch) sets `outcome.throttleMs`, so the connection can stop
   * reading once it has sent it (KIP-219).
   */
  async route(frame: Frame, ctx: RequestContext, outcome?: RouteOutcome): Promise<Buffer | null> {
    const spec = apiSpec(frame.apiKey);
    try {
      if (!spec) throw new EdgeqError('UNSUPPORTED_API', `unknown API key ${frame.apiKey}`, { details: { apiKey: frame.apiKey } });
      if (frame.apiVersion < spec.minVersion || frame.apiVersion > spec.maxVersion) {
        throw new EdgeqError(
          'UNSUPPORTED_VERSION',
          `${spec.name} version ${frame.apiVersion} is not supported (this broker speaks ${spec.minVersion}..${spec.maxVersion})`,
          { details: { api: spec.name, version: frame.apiVersion } },
        );
      }
      const req = decodeBody<object>(spec.requestType, frame.body);
      if (this.auth) authorizeRequest(this.auth, spec.name, req, ctx);
      const handler = this.handlers[spec.name] as unknown as (r: object, c: RequestContext) => Promise<object | null>;
      const res = await handler(req, ctx);
      if (res === null) return null;
      if (outcome) {
        const t = (res as { throttleMs?: unknown }).throttleMs;
        if (typeof t === 'number' && t > 0) outcome.throttleMs = t;
      }
      return encodeFrame(
        { flags: FLAG_RESPONSE, apiKey: frame.apiKey, apiVersion: frame.apiVersion, correlationId: frame.correlationId },
        encodeMessage(spec.responseType, res),
      );
    } catch (err) {
      const e = toEdgeqError(err);
      const level = e.code === 'UNKNOWN' ? 'error' : 'warn';
      this.logger[level]({ err: e, api: spec?.name ?? frame.apiKey, client: ctx.clientId, host: ctx.host }, 'request failed');
      return encodeErrorResponse(frame, e);
    }
  }
}

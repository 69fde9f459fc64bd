/**
 * What a mesh agent is given, and the checks on it that run before anything is built: each bad
 * value is an INVALID_CONFIG EdgeqError naming its key (config and limits are checked in
 * config.ts, keys in wire/keyring.ts, the bind address by the socket transport).
 */
import { EdgeqError, type Clock, type Logger } from '../../src/core/index.ts';
import type { MeshTls } from '../transport/mesh-tls.ts';
import type { MeshTransport } from '../transport/transport.ts';
import type { MacOnlyMode } from '../wire/codec.ts';
import type { MeshKey } from '../wire/keyring.ts';
import { isAddress, isMemberId, isRegion, tagsProblem } from '../wire/names.ts';
import type { MeshConfig, MeshLimits } from './config.ts';

/** Maps an advertised address to the one this process must dial (the dev deployment's per-link proxies). */
export type AddressTranslator = (advertised: string, kind: 'udp' | 'tcp') => string;

/** Options of a mesh agent. */
export interface MeshAgentOptions {
  /** Messages of another cluster are dropped (and counted). */
  clusterName: string;
  /** This member's id, unique in the mesh. */
  member: string;
  region: string;
  tags?: Record<string, string>;
  /** The key ring, primary first (at most two: rotation). */
  keys: readonly MeshKey[];
  /** Accept keys shorter than 32 bytes: the local dev deployment only. */
  insecureDevKey?: boolean;
  /**
   * The MAC-only wire of the first release (wire/codec.ts): 'off' (default) accepts encrypted
   * messages only; 'send' and 'accept' are the two steps of a rolling upgrade from it.
   */
  macOnly?: MacOnlyMode;
  /** TLS with mutual authentication for push-pull over TCP (the default transport only). */
  tls?: MeshTls;
  /** Where the default transport binds (127.0.0.1 unless told otherwise). */
  bindHost?: string;
  bindPort?: number;
  /** `host:port` others reach this member at; defaults to the bound address. */
  advertise?: string;
  /** Advertised addresses of members to join through at start (retried until one answers). */
  seeds?: readonly string[];
  translate?: AddressTranslator;
  clock?: Clock;
  transport?: MeshTransport;
  /** Seed of this agent's choices (probe order, peers, jitter); random when absent. */
  randomSeed?: number;
  config?: Partial<MeshConfig>;
  limits?: Partial<MeshLimits>;
  logger?: Logger;
}

function bad(key: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', `mesh ${key}: ${message}`, { details: { key } });
}

/** Checks the options that are not config, limits or keys; returns the tags and seeds to use. */
export function checkOptions(options: MeshAgentOptions): { tags: Record<string, string>; seeds: string[] } {
  if (options === null || typeof options !== 'object') throw bad('options', 'expected an object');
  if (typeof options.member !== 'string' || !isMemberId(options.member)) throw bad('member', `"${String(options.member)}" must match [A-Za-z0-9._:-]{1,64}`);
  if (typeof options.region !== 'string' || !isRegion(options.region)) throw bad('region', `"${String(options.region)}" is not a site name ([a-z0-9-]{1,63})`);
  const tags = options.tags ?? {};
  const tagError = typeof tags === 'object' && tags !== null ? tagsProblem(tags) : 'expected an object';
  if (tagError !== null) throw bad('tags', tagError);
  if (options.advertise !== undefined && !isAddress(options.advertise)) throw bad('advertise', `"${options.advertise}" is not host:port`);
  const seeds = options.seeds ?? [];
  if (!Array.isArray(seeds)) throw bad('seeds', 'expected an array of host:port');
  for (const s of seeds) if (typeof s !== 'string' || !isAddress(s)) throw bad('seeds', `"${String(s)}" is not host:port`);
  if (options.translate !== undefined && typeof options.translate !== 'function') throw bad('translate', 'expected a function');
  if (options.randomSeed !== undefined && !Number.isSafeInteger(options.randomSeed)) throw bad('randomSeed', 'expected an integer');
  return { tags: { ...tags }, seeds: [...seeds] };
}

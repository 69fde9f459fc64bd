// Proves the agent's options are checked before anything starts: every bad value and broken
// relation between bounds is an INVALID_CONFIG EdgeqError naming its key, and the defaults hold
// the relations they claim.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { SimClock } from '../sim/sim-clock.ts';
import { SimNetwork } from '../sim/sim-network.ts';
import { ENVELOPE_BYTES_MAX } from '../wire/codec.ts';
import { STATE_UPDATE_OVERHEAD_BYTES } from '../wire/messages.ts';
import { DEFAULT_MESH_LIMITS, pushPullBytesMax, resolveConfig, resolveLimits } from './config.ts';
import { MeshAgent, type MeshAgentOptions } from './mesh-agent.ts';

const KEY = 'k'.repeat(32);

function base(): MeshAgentOptions {
  const clock = new SimClock();
  return { clusterName: 'c', member: 'm1', region: 'us-east', keys: [KEY], advertise: '10.0.0.1:7946', clock, transport: new SimNetwork({ clock, seed: 1 }).endpoint('10.0.0.1:7946') };
}

function refused(options: unknown): { code: string; key: unknown; message: string } {
  try {
    new MeshAgent(options as MeshAgentOptions);
  } catch (err) {
    if (!isEdgeqError(err)) throw err;
    return { code: err.code, key: err.details['key'], message: err.message };
  }
  throw new Error('accepted');
}

describe('mesh agent options', () => {
  it.each([
    ['member', { member: 'has space' }, 'member'],
    ['member', { member: 'x'.repeat(65) }, 'member'],
    ['region', { region: 'US-East' }, 'region'],
    ['region', { region: '' }, 'region'],
    ['tags', { tags: { 'bad key': 'v' } }, 'tags'],
    ['tags', { tags: { k: 'é' } }, 'tags'],
    ['advertise', { advertise: 'no-port' }, 'advertise'],
    ['seeds', { seeds: ['10.0.0.2'] }, 'seeds'],
    ['seeds', { seeds: 'x' }, 'seeds'],
    ['translate', { translate: 'identity' }, 'translate'],
    ['clusterName', { clusterName: 'a b' }, 'clusterName'],
    ['keys', { keys: ['short'] }, 'keys[0]'],
    ['keys', { keys: [] }, 'keys'],
    ['config', { config: { probeIntervalMs: 0 } }, 'config.probeIntervalMs'],
    ['config', { config: { probeTimeoutMs: 500, probeIntervalMs: 500 } }, 'config.probeTimeoutMs'],
    ['config', { config: { gossipNodes: 1.5 } }, 'config.gossipNodes'],
    ['config', { config: { lifeguard: 'yes' } }, 'config.lifeguard'],
    ['config', { config: { nope: 1 } }, 'config.nope'],
    ['config', { config: { gossipToTheDeadMs: 10, deadRetainMs: 5 } }, 'config.gossipToTheDeadMs'],
    ['limits', { limits: { datagramBytesMax: 100 } }, 'limits.datagramBytesMax'],
    ['limits', { limits: { datagramBytesMax: 70_000 } }, 'limits.datagramBytesMax'],
    ['limits', { limits: { stateValueBytesMax: 1100 } }, 'limits.stateValueBytesMax'],
    ['limits', { limits: { frameBytesMax: 1 << 20 } }, 'limits.frameBytesMax'],
    ['limits', { limits: { broadcastQueueMax: 100 } }, 'limits.broadcastQueueMax'],
  ])('refuses a bad %s (%j)', (_what, patch, key) => {
    const r = refused({ ...base(), ...patch });
    expect(r.code).toBe('INVALID_CONFIG');
    expect(r.key).toBe(key);
    expect(r.message).toContain(key.split('[')[0]!.split('.').pop()!);
  });

  it('accepts a short key with insecureDevKey, and the defaults', () => {
    expect(() => new MeshAgent({ ...base(), keys: ['dev'], insecureDevKey: true })).not.toThrow();
    expect(() => new MeshAgent(base())).not.toThrow();
  });

  it('defaults keep their own relations: a state entry fits a datagram, the whole state fits a frame', () => {
    const l = resolveLimits();
    expect(pushPullBytesMax(l)).toBeLessThanOrEqual(l.frameBytesMax);
    expect(resolveLimits({ datagramBytesMax: 9000, stateValueBytesMax: 8000 }).stateValueBytesMax).toBe(8000);
    // 164 (envelope) + 1 (update count) + 206 (state update overhead) + 1024 (value) = 1395 bytes.
    const tightest = ENVELOPE_BYTES_MAX + 1 + STATE_UPDATE_OVERHEAD_BYTES + DEFAULT_MESH_LIMITS.stateValueBytesMax;
    expect(tightest).toBe(1395);
    expect(resolveLimits({ datagramBytesMax: tightest }).datagramBytesMax).toBe(tightest);
    expect(() => resolveLimits({ datagramBytesMax: tightest - 1 })).toThrow(/stateValueBytesMax/);
    expect(resolveConfig().probeTimeoutMs).toBeLessThan(resolveConfig().probeIntervalMs);
  });
});

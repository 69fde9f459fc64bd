// Proves the agent over real UDP and TCP on 127.0.0.1: two agents join and see each other alive,
// an ack goes to the advertised address a ping names (through the address translation), never to
// the address the datagram came from, and push-pull dials through the translation too.
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../src/testing/index.ts';
import { MeshCodec } from '../wire/codec.ts';
import { Keyring } from '../wire/keyring.ts';
import { MeshAgent, type MeshAgentOptions } from './mesh-agent.ts';

const KEY = 'real-socket-test-key-0123456789ab';
const FAST = { probeIntervalMs: 100, probeTimeoutMs: 50, gossipIntervalMs: 50, pushPullIntervalMs: 1_000, reconnectIntervalMs: 200 };
const running: MeshAgent[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const a of running.splice(0)) await a.stop();
  for (const s of sockets.splice(0)) s.close();
});

async function agent(options: Partial<MeshAgentOptions> & { member: string }): Promise<MeshAgent> {
  const a = new MeshAgent({ clusterName: 'real', region: 'us-east', keys: [KEY], bindHost: '127.0.0.1', bindPort: 0, config: FAST, ...options });
  running.push(a);
  await a.start();
  return a;
}

/** A UDP socket on 127.0.0.1 that records what it receives. */
async function socket(): Promise<{ s: Socket; address: string; got: Buffer[]; next: () => Promise<Buffer> }> {
  const s = createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const got: Buffer[] = [];
  const waiting: ((b: Buffer) => void)[] = [];
  s.on('message', (m) => {
    got.push(m);
    waiting.shift()?.(m);
  });
  return { s, address: `127.0.0.1:${s.address().port}`, got, next: () => new Promise((r) => waiting.push(r)) };
}

const codec = new MeshCodec({ clusterName: 'real', keyring: new Keyring([KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 } });

function send(s: Socket, to: string, bytes: Buffer): void {
  const [host, port] = to.split(':');
  s.send(bytes, Number(port), host);
}

describe('mesh agent on real sockets', () => {
  it('two agents join through a seed and see each other alive', async () => {
    const a = await agent({ member: 'a' });
    const b = await agent({ member: 'b', region: 'eu-west', seeds: [a.self().address] });
    await eventually(() => a.member('b')?.state === 'alive' && b.member('a')?.state === 'alive', 10_000, 'a and b alive in each other’s view');
    expect(a.member('b')).toMatchObject({ region: 'eu-west', address: b.self().address });
    await eventually(() => a.stats().probes > 3 && b.member('a')!.lastHeardMs >= 0, 10_000, 'probes');
    expect(a.stats().drops['bad-mac']).toBe(0);
  });

  it('acks the advertised address a ping names, through translate, never the datagram source', async () => {
    const sender = await socket();
    const receiver = await socket();
    const translated: [string, string][] = [];
    const a = await agent({
      member: 'a',
      translate: (advertised, kind) => {
        translated.push([advertised, kind]);
        return advertised === '10.99.0.1:7000' ? receiver.address : advertised;
      },
    });
    const ping = codec.encodePacket('x1', { type: 'ping', seq: 41, target: 'a', sourceAddr: '10.99.0.1:7000' });
    const ack = receiver.next();
    send(sender.s, a.self().address, ping);
    const got = codec.decodePacket(await ack);
    expect(got).toMatchObject({ ok: true, value: { sender: 'a', primary: { type: 'ack', seq: 41 } } });
    expect(translated).toContainEqual(['10.99.0.1:7000', 'udp']);
    // A second ping naming the receiver directly: its ack also goes there, and by the time it
    // arrives the first one's reply would have reached the sender if it had been sent there.
    const second = receiver.next();
    send(sender.s, a.self().address, codec.encodePacket('x1', { type: 'ping', seq: 42, target: 'a', sourceAddr: receiver.address }));
    expect(codec.decodePacket(await second)).toMatchObject({ ok: true, value: { primary: { type: 'ack', seq: 42 } } });
    expect(sender.got).toEqual([]);
  });

  it('dials push-pull through translate', async () => {
    const a = await agent({ member: 'a' });
    const kinds: string[] = [];
    const b = await agent({
      member: 'b',
      translate: (advertised, kind) => {
        kinds.push(kind);
        return advertised === '10.99.0.2:7000' ? a.self().address : advertised;
      },
    });
    expect(await b.join(['10.99.0.2:7000'])).toBe(1);
    expect(kinds).toContain('tcp');
    expect(b.member('a')?.state).toBe('alive');
  });
});

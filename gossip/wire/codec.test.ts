// Proves the mesh codec byte by byte (envelope, every message and update, push-pull), that what
// it encodes decodes back to the same values, and that every bad input in the table is dropped
// with its reason, never thrown and never half-parsed.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ByteWriter } from './bytes.ts';
import { ENVELOPE_BYTES_MAX, MeshCodec, type DropReason } from './codec.ts';
import { Keyring, MAC_BYTES } from './keyring.ts';
import { encodeUpdate, type PushPull, type StateUpdate, type Update } from './messages.ts';

const KEY = Buffer.alloc(32, 1);
const OTHER_KEY = Buffer.alloc(32, 2);
const LIMITS = { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 };

function codec(options: { cluster?: string; keys?: Buffer[]; datagramBytesMax?: number } = {}): MeshCodec {
  return new MeshCodec({ clusterName: options.cluster ?? 'c1', keyring: new Keyring(options.keys ?? [KEY]), datagramBytesMax: options.datagramBytesMax ?? 1400, frameBytesMax: 1 << 20, limits: LIMITS });
}

const mac = (key: Buffer, body: Buffer): Buffer => createHmac('sha256', key).update(body).digest();
const sealed = (body: Buffer, key = KEY): Buffer => Buffer.concat([body, mac(key, body)]);
const ascii = (s: string): number[] => [...Buffer.from(s, 'ascii')];
/** An envelope for cluster c1, sender `a`, with `type` and raw payload bytes, correctly MAC'd. */
const raw = (type: number, payload: number[], key = KEY): Buffer => sealed(Buffer.from([1, type, 2, ...ascii('c1'), 1, ...ascii('a'), ...payload]), key);

describe('envelope and datagrams, byte by byte', () => {
  it('encodes a ping as version, type, cluster, sender, payload, update count and HMAC-SHA256 of everything before it', () => {
    const bytes = codec().encodePacket('a', { type: 'ping', seq: 0x01020304, target: 'b', sourceAddr: '10.0.0.1:7946' });
    const body = Buffer.from([1, 1, 2, ...ascii('c1'), 1, ...ascii('a'), 1, 2, 3, 4, 1, ...ascii('b'), 13, ...ascii('10.0.0.1:7946'), 0]);
    expect(bytes.subarray(0, body.length)).toEqual(body);
    expect(bytes.subarray(body.length)).toEqual(mac(KEY, body));
    expect(bytes.length).toBe(body.length + MAC_BYTES);
  });

  it('encodes ack, nack, ping-req and gossip payloads', () => {
    const c = codec();
    const payload = (b: Buffer): number[] => [...b.subarray(7, b.length - MAC_BYTES)];
    expect(payload(c.encodePacket('a', { type: 'ack', seq: 7 }))).toEqual([0, 0, 0, 7, 0]);
    expect(c.encodePacket('a', { type: 'ack', seq: 7 })[1]).toBe(2);
    expect(payload(c.encodePacket('a', { type: 'nack', seq: 0xffffffff }))).toEqual([255, 255, 255, 255, 0]);
    expect(c.encodePacket('a', { type: 'nack', seq: 1 })[1]).toBe(3);
    const pr = c.encodePacket('a', { type: 'ping-req', seq: 9, target: 'x', targetAddr: 'h:1', sourceAddr: 'g:2', nack: true });
    expect(pr[1]).toBe(4);
    expect(payload(pr)).toEqual([0, 0, 0, 9, 1, ...ascii('x'), 3, ...ascii('h:1'), 3, ...ascii('g:2'), 1, 0]);
    const g = c.encodePacket('a', { type: 'gossip' });
    expect(g[1]).toBe(5);
    expect(payload(g)).toEqual([0]);
  });

  it('encodes each update kind', () => {
    expect([...encodeUpdate({ kind: 'alive', member: 'm', region: 'r', incarnation: 258, address: 'h:1', tags: { k: 'v' } })]).toEqual([
      1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 1, 2, 3, ...ascii('h:1'), 1, 1, ...ascii('k'), 1, ...ascii('v'),
    ]);
    expect([...encodeUpdate({ kind: 'suspect', member: 'm', incarnation: 1, from: 'f' })]).toEqual([2, 1, ...ascii('m'), 0, 0, 0, 1, 1, ...ascii('f')]);
    expect([...encodeUpdate({ kind: 'dead', member: 'm', incarnation: 2, from: 'f' })]).toEqual([3, 1, ...ascii('m'), 0, 0, 0, 2, 1, ...ascii('f')]);
    expect([...encodeUpdate({ kind: 'left', member: 'm', incarnation: 3 })]).toEqual([4, 1, ...ascii('m'), 0, 0, 0, 3]);
    const version = 1_700_000_000_000_123;
    const v = Buffer.alloc(8);
    v.writeDoubleBE(version);
    expect([...encodeUpdate({ kind: 'state', key: 'k/1', version, member: 'w', deleted: false, json: true, value: Buffer.from('{}') })]).toEqual([
      5, 3, ...ascii('k/1'), ...v, 1, ...ascii('w'), 2, 0, 2, ...ascii('{}'),
    ]);
    expect([...encodeUpdate({ kind: 'state', key: 'k', version: 5, member: 'w', deleted: true, json: false, value: Buffer.alloc(0) })].slice(-3)).toEqual([1, 0, 0]);
  });

  it('round-trips a datagram with piggybacked updates', () => {
    const c = codec();
    const updates: Update[] = [
      { kind: 'alive', member: 'us-east-gw-1', region: 'us-east', incarnation: 4, address: '[::1]:7946', tags: { role: 'gateway' } },
      { kind: 'suspect', member: 'b', incarnation: 1, from: 'c' },
      { kind: 'state', key: 'region/us-east', version: 123_456, member: 'a', deleted: false, json: true, value: Buffer.from('{"ok":true}') },
    ];
    const bytes = c.encodePacket('a', { type: 'ping', seq: 1, target: 'b', sourceAddr: '127.0.0.1:1' }, updates.map(encodeUpdate));
    const d = c.decodePacket(bytes);
    expect(d).toEqual({ ok: true, value: { sender: 'a', primary: { type: 'ping', seq: 1, target: 'b', sourceAddr: '127.0.0.1:1' }, updates } });
  });

  it('round-trips a push-pull, members in every state and tombstones included', () => {
    const c = codec();
    const entries: StateUpdate[] = [
      { kind: 'state', key: 'a', version: 1, member: 'm1', deleted: false, json: false, value: Buffer.from([0, 255]) },
      { kind: 'state', key: 'b', version: 2, member: 'm2', deleted: true, json: false, value: Buffer.alloc(0) },
    ];
    const p: PushPull = {
      join: true,
      response: false,
      members: [
        { member: 'm0', region: 'r', incarnation: 0, address: 'h:1', tags: {}, state: 'alive' },
        { member: 'm1', region: 'r', incarnation: 1, address: 'h:2', tags: { k: 'v' }, state: 'suspect', accuser: 'm0' },
        { member: 'm2', region: 'r', incarnation: 2, address: 'h:3', tags: {}, state: 'dead', accuser: 'm3' },
        { member: 'm3', region: 'r', incarnation: 3, address: 'h:4', tags: {}, state: 'left' },
      ],
      entries,
    };
    const bytes = c.encodePushPull('m0', p);
    expect(bytes[1]).toBe(6);
    expect(bytes[8]).toBe(1); // flags after the 2-byte sender: join
    expect(c.decodePushPull(bytes)).toEqual({ ok: true, value: { sender: 'm0', pushPull: p } });
  });

  it('reports the room left for updates exactly', () => {
    const c = codec({ datagramBytesMax: 600 });
    const primary = { type: 'ping' as const, seq: 1, target: 'b', sourceAddr: 'h:1' };
    const room = c.updateRoom('a', primary);
    const filler = (n: number) => encodeUpdate({ kind: 'state', key: 'k', version: 1, member: 'a', deleted: false, json: false, value: Buffer.alloc(n - 16) });
    expect(filler(room).length).toBe(room);
    expect(c.encodePacket('a', primary, [filler(room)]).length).toBe(600);
    expect(() => c.encodePacket('a', primary, [filler(room + 1)])).toThrow(/over datagramBytesMax/);
  });
});

describe('bad datagrams are dropped with their reason', () => {
  const c = codec();
  const good = c.encodePacket('a', { type: 'ping', seq: 1, target: 'b', sourceAddr: 'h:1' });
  const flip = (b: Buffer, at: number): Buffer => {
    const x = Buffer.from(b);
    x[at] = x[at]! ^ 0x40;
    return x;
  };
  const table: [string, Buffer, DropReason][] = [
    ['empty', Buffer.alloc(0), 'malformed'],
    ['shorter than any envelope', Buffer.alloc(20, 1), 'malformed'],
    ['over datagramBytesMax', Buffer.alloc(1401, 1), 'oversized'],
    ['version 0', Buffer.concat([Buffer.from([0]), good.subarray(1)]), 'bad-version'],
    ['version 2', Buffer.concat([Buffer.from([2]), good.subarray(1)]), 'bad-version'],
    ['another cluster', codec({ cluster: 'c2' }).encodePacket('a', { type: 'ack', seq: 1 }), 'wrong-cluster'],
    ['cluster length past the end', Buffer.from([1, 1, 200, ...Buffer.alloc(40)]), 'malformed'],
    ['another key', codec({ keys: [OTHER_KEY] }).encodePacket('a', { type: 'ack', seq: 1 }), 'bad-mac'],
    ['a flipped payload byte', flip(good, 10), 'bad-mac'],
    ['a flipped MAC byte', flip(good, good.length - 1), 'bad-mac'],
    ['a flipped type byte', flip(good, 1), 'bad-mac'],
    ['truncated by one byte', good.subarray(0, good.length - 1), 'bad-mac'],
    ['one byte appended', Buffer.concat([good, Buffer.from([0])]), 'bad-mac'],
    ['unknown type 9', raw(9, [0]), 'unknown-type'],
    ['type 0', raw(0, [0]), 'unknown-type'],
    ['a push-pull as a datagram', raw(6, [0, 0, 0, 0, 0, 0, 0]), 'unknown-type'],
    ['ping cut short', raw(1, [0, 0, 0, 1, 1]), 'malformed'],
    ['trailing bytes', raw(2, [0, 0, 0, 1, 0, 9]), 'malformed'],
    ['update count past the end', raw(2, [0, 0, 0, 1, 2, 4, 1, ...ascii('m'), 0, 0, 0, 1]), 'malformed'],
    ['unknown update kind', raw(5, [1, 9, 0]), 'malformed'],
    ['member id with a space', raw(5, [1, 4, 2, ...ascii('m '), 0, 0, 0, 1]), 'malformed'],
    ['member id empty', raw(5, [1, 4, 0, 0, 0, 0, 1]), 'malformed'],
    ['ping target address without a port', raw(1, [0, 0, 0, 1, 1, ...ascii('b'), 1, ...ascii('h'), 0]), 'malformed'],
    ['ping-req flags 2', raw(4, [0, 0, 0, 1, 1, ...ascii('b'), 3, ...ascii('h:1'), 3, ...ascii('h:2'), 2, 0]), 'malformed'],
    ['alive with a bad region', raw(5, [1, 1, 1, ...ascii('m'), 2, ...ascii('US'), 0, 0, 0, 0, 3, ...ascii('h:1'), 0]), 'malformed'],
    ['alive with a tag count past the end', raw(5, [1, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 5]), 'malformed'],
    ['alive with a __proto__ tag', raw(5, [1, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 1, 9, ...ascii('__proto__'), 1, ...ascii('x')]), 'malformed'],
    ['state with a negative version', raw(5, [1, 5, 1, ...ascii('k'), 0xbf, 0xf0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['state with a fractional version', raw(5, [1, 5, 1, ...ascii('k'), 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['state with flags 4', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 4, 0, 0]), 'malformed'],
    ['a tombstone with a value', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 1, 0, 1, 7]), 'malformed'],
    ['a state value over its bound', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0x04, 0x01, ...Buffer.alloc(1025)]), 'malformed'],
    ['a state key with a space', raw(5, [1, 5, 2, ...ascii('k '), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['a sender id with a slash', sealed(Buffer.from([1, 2, 2, ...ascii('c1'), 2, ...ascii('a/'), 0, 0, 0, 1, 0])), 'malformed'],
  ];
  const cases = table.map(([name, bytes, reason]) => ({ name, bytes, reason }));
  it.each(cases)('$name → $reason', ({ bytes, reason }) => {
    const d = c.decodePacket(bytes);
    expect(d.ok).toBe(false);
    if (!d.ok) expect(d.reason).toBe(reason);
  });

  it('refuses a push-pull over its bound, and datagram types on a stream', () => {
    const small = new MeshCodec({ clusterName: 'c1', keyring: new Keyring([KEY]), datagramBytesMax: 1400, frameBytesMax: 2048, limits: LIMITS });
    expect(() => small.encodePushPull('a', { join: false, response: false, members: Array.from({ length: 10 }, (_, i) => ({ member: `m${i}`, region: 'r', incarnation: 0, address: 'h:1', tags: { t: 'x'.repeat(60), u: 'y'.repeat(60), v: 'z'.repeat(60) }, state: 'alive' as const })), entries: [] })).toThrow(/frameBytesMax/);
    expect(small.decodePushPull(Buffer.alloc(2049, 1))).toMatchObject({ ok: false, reason: 'oversized' });
    expect(codec().decodePushPull(codec().encodePacket('a', { type: 'ack', seq: 1 }))).toMatchObject({ ok: false, reason: 'unknown-type' });
    expect(codec().decodePushPull(raw(6, [3, 0, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 0, 9, 0, 0, 0, 0]))).toMatchObject({ ok: false, reason: 'malformed' });
    expect(codec().decodePushPull(raw(6, [0, 0, 0, 0, 0, 0, 0]))).toMatchObject({ ok: true });
  });

  it('envelope overhead constant covers the longest names', () => {
    const w = new ByteWriter();
    w.u8(1).u8(1).str8('c'.repeat(64)).str8('m'.repeat(64));
    expect(w.length + MAC_BYTES).toBe(ENVELOPE_BYTES_MAX);
  });
});

describe('key rotation', () => {
  it('sends with the primary key and accepts either key of the ring', () => {
    const oldOnly = codec({ keys: [OTHER_KEY] });
    const rotating = codec({ keys: [KEY, OTHER_KEY] });
    const newOnly = codec({ keys: [KEY] });
    const fromOld = oldOnly.encodePacket('a', { type: 'ack', seq: 1 });
    const fromRotating = rotating.encodePacket('a', { type: 'ack', seq: 2 });
    expect(rotating.decodePacket(fromOld).ok).toBe(true);
    expect(newOnly.decodePacket(fromRotating).ok).toBe(true);
    expect(oldOnly.decodePacket(fromRotating)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(fromRotating.subarray(-MAC_BYTES)).toEqual(mac(KEY, fromRotating.subarray(0, -MAC_BYTES)));
  });
});

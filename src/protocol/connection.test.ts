// Proves a Connection runs over an injected transport (no TCP, fake clock): it negotiates and answers through a fake socket, and a broker that accepts the connection but never answers (a frozen process) fails the connect and each request with a retriable REQUEST_TIMED_OUT exactly at their deadlines, not before.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { decodeBody, type MetadataRequest } from './index.ts';
import { Connection } from './connection.ts';
import { FakeNetwork, settle, track } from './test-support.ts';

const address = { host: 'fake', port: 1 };
const metadataAnswer = (topic: string) => ({ brokers: [], controllerId: 1, clusterId: 'fake', topics: [{ name: topic, partitions: [], internal: false }] });
const answering = (network: FakeNetwork) =>
  network.set('fake:1', { brokerId: 4, handler: (f, reply) => reply(metadataAnswer(decodeBody<MetadataRequest>('MetadataRequest', f.body).topics?.[0] ?? '')) });

/** Tracks a promise's outcome without awaiting it, so a test can check it is still pending. */

describe('Connection over an injected transport', () => {
  it('negotiates and answers through the socket the factory gave it', async () => {
    const network = new FakeNetwork();
    answering(network);
    const conn = await Connection.connect(address, { socketFactory: network.socketFactory });
    expect(conn.brokerId).toBe(4);
    expect((await conn.request('Metadata', { topics: ['t'] })).topics[0]!.name).toBe('t');
    expect(network.opened.get('fake:1')).toBe(1);
    conn.close();
  });

  it('a frozen broker: connect fails with REQUEST_TIMED_OUT at connectTimeoutMs, not before', async () => {
    const network = new FakeNetwork();
    network.set('fake:1', { mode: 'frozen' });
    const clock = new FakeClock();
    const connecting = track(Connection.connect(address, { socketFactory: network.socketFactory, clock, connectTimeoutMs: 1_000 }));
    await settle();
    clock.advance(999);
    await settle();
    expect(connecting.state()).toBe('pending');
    clock.advance(1);
    await settle();
    expect(connecting.state()).toBe('rejected');
    expect(connecting.error()).toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
    // The half-open stream is not left behind.
    expect(network.sockets[0]!.destroyed).toBe(true);
  });

  it('a broker frozen after connect: a request fails at its own timeout and the connection stays usable after the broker thaws', async () => {
    const network = new FakeNetwork();
    answering(network);
    const clock = new FakeClock();
    const conn = await Connection.connect(address, { socketFactory: network.socketFactory, clock });
    network.set('fake:1', { mode: 'frozen' });
    const asked = track(conn.request('Metadata', { topics: ['slow'] }, { timeoutMs: 500 }));
    await settle();
    clock.advance(499);
    await settle();
    expect(asked.state()).toBe('pending');
    clock.advance(1);
    await settle();
    expect(asked.error()).toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true, details: { timeoutMs: 500 } });
    // Thawed: its late answer arrives and is dropped (nobody waits for it); new requests work.
    answering(network);
    network.resume('fake:1');
    await settle();
    expect((await conn.request('Metadata', { topics: ['fast'] })).topics[0]!.name).toBe('fast');
    conn.close();
  });

  it('a refused connection fails with a retriable CONNECTION_CLOSED', async () => {
    const network = new FakeNetwork();
    await expect(Connection.connect(address, { socketFactory: network.socketFactory })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED', retriable: true });
  });
});

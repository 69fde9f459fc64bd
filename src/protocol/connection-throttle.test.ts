// Proves the client's side of KIP-219 on a fake transport and clock: after a response carrying a
// throttle, a Connection holds every further request (none reaches the broker) until the
// throttle is over, with one timer for all of them; a request whose timeout ends inside the
// throttle fails at once with THROTTLED (retriable), and closing the connection fails held
// requests at once.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { apiSpec } from './index.ts';
import { Connection } from './connection.ts';
import { FakeNetwork, settle, track } from './test-support.ts';

const address = { host: 'fake', port: 1 };

/** A broker that answers Produce with `throttleMs` and Metadata plainly, and logs what it read. */
function throttlingBroker(network: FakeNetwork, throttleMs: number): string[] {
  const seen: string[] = [];
  network.set('fake:1', {
    handler: (f, reply) => {
      const name = apiSpec(f.apiKey)!.name;
      seen.push(name);
      if (name === 'Produce') reply({ topics: [], throttleMs });
      else reply({ brokers: [], controllerId: 1, clusterId: 'fake', topics: [] });
    },
  });
  return seen;
}

describe('Connection throttle (KIP-219, client side)', () => {
  it('holds further requests until the throttle is over, with one timer for all of them', async () => {
    const network = new FakeNetwork();
    const seen = throttlingBroker(network, 500);
    const clock = new FakeClock();
    const conn = await Connection.connect(address, { socketFactory: network.socketFactory, clock });
    const res = await conn.request('Produce', { topics: [] });
    expect(res.throttleMs).toBe(500);
    expect(conn.throttledForMs).toBe(500);
    const timersBefore = clock.pendingTimers();
    const held = [track(conn.request('Metadata', { topics: [] })), track(conn.request('Metadata', { topics: [] })), track(conn.request('Metadata', { topics: [] }))];
    await settle();
    // Three requests held: one timer (plus nothing written).
    expect(clock.pendingTimers() - timersBefore).toBe(1);
    expect(seen).toEqual(['Produce']);
    clock.advance(499);
    await settle();
    expect(seen).toEqual(['Produce']);
    expect(held.map((h) => h.state())).toEqual(['pending', 'pending', 'pending']);
    clock.advance(1);
    await settle();
    expect(seen).toEqual(['Produce', 'Metadata', 'Metadata', 'Metadata']);
    expect(held.map((h) => h.state())).toEqual(['resolved', 'resolved', 'resolved']);
    conn.close();
  });

  it('fails at once, THROTTLED, a request whose timeout ends inside the throttle; closing fails held requests at once', async () => {
    const network = new FakeNetwork();
    const seen = throttlingBroker(network, 1_000);
    const clock = new FakeClock();
    const conn = await Connection.connect(address, { socketFactory: network.socketFactory, clock });
    await conn.request('Produce', { topics: [] });
    await expect(conn.request('Metadata', { topics: [] }, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'THROTTLED', retriable: true, details: { throttleMs: 1_000 } });
    const held = track(conn.request('Metadata', { topics: [] }));
    await settle();
    conn.close();
    await settle();
    expect(held.state()).toBe('rejected');
    expect(held.error()).toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(seen).toEqual(['Produce']);
  });
});

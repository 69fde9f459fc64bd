/**
 * Checks, before the local deployment starts anything, that every port it will listen on is free
 * on 127.0.0.1 (TCP, and UDP for the mesh agents' ports): a port another process holds is a
 * clear INVALID_CONFIG naming it and what would have used it, instead of a half-started
 * deployment whose one child keeps dying.
 */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { EdgeqError } from '../../core/errors.ts';
import { portsOf, type Topology } from './topology.ts';

function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** Throws INVALID_CONFIG for the first port of the deployment that is taken. */
export async function checkPortsFree(t: Topology): Promise<void> {
  const mesh = new Set(t.regions.map((r) => r.meshPort));
  for (const { port, what } of portsOf(t)) {
    const free = (await tcpFree(port)) && (!mesh.has(port) || (await udpFree(port)));
    if (!free) {
      throw new EdgeqError('INVALID_CONFIG', `port ${port} (${what}) is in use on 127.0.0.1: stop what holds it, or move the deployment's ports (EDGEQ_PORT, EDGEQ_MESH_PORT, EDGEQ_ARBITER_PORT, EDGEQ_BROKER_PORT, EDGEQ_ADMIN_PORT, EDGEQ_CONTROL_PORT)`, {
        details: { key: 'ports', port },
      });
    }
  }
}

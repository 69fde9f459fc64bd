/**
 * The broker's listening socket: plaintext TCP, or TLS with the material's certificate (kept
 * current as its files reload: new handshakes get the new certificate, open connections keep
 * theirs). On TLS, a verified client certificate whose identity the keys file maps
 * authenticates the connection from its first byte; refused handshakes (no or bad certificate,
 * another CA, expired, plaintext on the TLS port) never reach the protocol and are counted.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../core/index.ts';
import { followReloads, peerIdentity, registerTlsMetrics, tlsServerOptions, type TlsClientAuth, type TlsMaterial } from '../tls/index.ts';
import type { BinaryPrincipal, BrokerAuth } from './broker-auth.ts';

/** What the listener needs. */
export interface ListenerDeps {
  tls: { material: TlsMaterial; clientAuth: TlsClientAuth } | undefined;
  auth: BrokerAuth | null;
  registry: Registry;
  logger: Logger;
  /** Serves one accepted connection, with the principal its certificate proved (null: none). */
  serve(socket: Socket, principal: BinaryPrincipal | null): void;
}

/** The server (not yet listening) and how to stop following certificate reloads. */
export function createListener(d: ListenerDeps): { server: Server; stop: () => void } {
  if (!d.tls) return { server: createServer((socket: Socket) => d.serve(socket, null)), stop: () => undefined };
  const { material, clientAuth } = d.tls;
  const handshakeFailures = new Counter({
    name: 'edgeq_tls_handshake_failures_total',
    help: 'TLS handshakes the broker refused (no or bad client certificate, another CA, expired, plaintext on the TLS port).',
    registers: [d.registry],
  });
  registerTlsMetrics(d.registry, { broker: material });
  const auth = d.auth;
  const server = createTlsServer(tlsServerOptions(material, clientAuth), (socket: TLSSocket) => {
    const identity = auth ? peerIdentity(socket) : null;
    const principal = identity !== null ? auth!.principalOfCertificate(identity) : null;
    // A verified certificate the keys file does not map: counted; the client may still send a key.
    if (identity !== null && principal === null) auth!.countRefusal('unknown_certificate');
    d.serve(socket, principal);
  });
  server.on('tlsClientError', (err, socket) => {
    handshakeFailures.inc();
    // Debug only: a scanner would flood the log; the counter is the signal to alert on.
    d.logger.debug({ err: err.message, host: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}` }, 'TLS handshake refused');
  });
  return { server, stop: followReloads(server, material) };
}

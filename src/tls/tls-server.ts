/**
 * Server side helpers: the options of a TLS listener for a client-auth mode, and keeping a
 * listening server's certificate current as its material reloads.
 */
import type { TlsOptions } from 'node:tls';
import type { TlsClientAuth } from './tls-config.ts';
import type { TlsMaterial } from './tls-material.ts';

/** Options of `tls.createServer` / `https.createServer` for `material` and a client-auth mode. */
export function tlsServerOptions(material: TlsMaterial, clientAuth: TlsClientAuth): TlsOptions {
  return {
    ...material.serverOptions(),
    // `optional` asks for a certificate and lets the handshake through without one; a given one
    // is still verified (socket.authorized), and only a verified one is an identity.
    requestCert: clientAuth !== 'none',
    rejectUnauthorized: clientAuth === 'required',
  };
}

/** What `setSecureContext` is called on: a tls.Server or https.Server. */
export interface SecureContextTarget {
  setSecureContext(options: TlsOptions): void;
}

/**
 * Keeps `server`'s certificate current: each reload of `material` sets a new secure context, used
 * by handshakes from then on; open connections keep theirs (nothing is dropped). Returns the
 * function that stops following.
 */
export function followReloads(server: SecureContextTarget, material: TlsMaterial): () => void {
  return material.onChange(() => server.setSecureContext(material.serverOptions()));
}

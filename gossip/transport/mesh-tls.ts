/**
 * TLS for the mesh's TCP (push-pull), injected: the mesh does not read certificate files. The
 * gateway hands in src/tls's FileTlsMaterial (its `serverOptions()` / `clientOptions()` /
 * `onChange()` fit this interface as they are), which reloads the files when they change; a test
 * hands in fixed options.
 *
 * Mutual: the listener asks for a client certificate and refuses a connection whose certificate
 * is missing or does not verify against its CA before reading a byte of it (the transport checks
 * `socket.authorized` at once, so the refusal is counted with OpenSSL's reason, e.g.
 * CERT_HAS_EXPIRED, rather than the bare "socket hang up" a handshake-level refusal reports),
 * and the dialer verifies the listener's chain the same way before it sends its frame. A member is "a holder of a certificate from the mesh's CA"; host names are not checked,
 * because members dial advertised `host:port` strings that the address translation may rewrite
 * (the dev deployment's per-link proxies) and advertise IPs, not names. Use a CA (or an
 * intermediate) that signs mesh members only, or `verifyPeer` to check the identity.
 * TLS 1.3 is the floor unless the material says otherwise.
 */
import type { ConnectionOptions, PeerCertificate, SecureContextOptions, TlsOptions } from 'node:tls';

/** The floor when the material names none. */
export const MESH_TLS_MIN_VERSION_DEFAULT = 'TLSv1.3' as const;

/** What the mesh needs of TLS material (src/tls's TlsMaterial has these). */
export interface MeshTls {
  /** cert, key, ca (and minVersion) of the listener, read at start and at each change. */
  serverOptions(): SecureContextOptions;
  /** What `tls.connect` takes for a new connection (read at each push-pull). */
  clientOptions(): ConnectionOptions;
  /** Calls `listener` after the material changed (a reload); returns the unsubscribe. */
  onChange?(listener: () => void): () => void;
  /**
   * Checks a verified peer's certificate beyond its chain (e.g. a SAN naming a mesh member);
   * returns why it is refused, or null. Absent: any certificate of a trusted CA is a member.
   */
  verifyPeer?(cert: PeerCertificate): string | null;
}

/** The listener's options: mutual authentication, the floor, the handshake bound. */
export function meshTlsServerOptions(tls: MeshTls, handshakeTimeoutMs: number): TlsOptions {
  const o = tls.serverOptions();
  // rejectUnauthorized false: the transport refuses unverified peers itself (see above).
  return { minVersion: MESH_TLS_MIN_VERSION_DEFAULT, ...o, requestCert: true, rejectUnauthorized: false, handshakeTimeout: handshakeTimeoutMs };
}

/** Why a peer that completed the handshake is refused, or null when its certificate verified (and passes `verifyPeer`). */
export function meshTlsRefusal(tls: MeshTls, socket: { authorized: boolean; authorizationError?: Error | string | null; getPeerCertificate(): PeerCertificate }): string | null {
  if (!socket.authorized) {
    const cert = socket.getPeerCertificate();
    const err = socket.authorizationError;
    const why = err ? (typeof err === 'string' ? err : (err as Error & { code?: string }).code ?? err.message) : 'unverified';
    return cert && Object.keys(cert).length > 0 ? `client certificate refused: ${why}` : `no client certificate (${why})`;
  }
  return tls.verifyPeer ? tls.verifyPeer(socket.getPeerCertificate()) : null;
}

/** The dialer's options: verify the listener's chain (not its name, see above), present our certificate. */
export function meshTlsClientOptions(tls: MeshTls): ConnectionOptions {
  return { minVersion: MESH_TLS_MIN_VERSION_DEFAULT, ...tls.clientOptions(), rejectUnauthorized: true, checkServerIdentity: () => undefined };
}

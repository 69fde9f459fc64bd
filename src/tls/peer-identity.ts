/**
 * The identity a verified client certificate proves: its first URI subject alternative name
 * (e.g. a SPIFFE id), else the subject's common name. DNS names are not identities: a broker's
 * certificate lists the host names it serves (localhost, its pod's name), which say where it is,
 * not who. Only a certificate the server verified against its CA
 * (`socket.authorized`) counts; an unverified one (`--tls-client-auth optional`) proves nothing.
 */
import type { PeerCertificate, TLSSocket } from 'node:tls';

/** Longest identity kept (a SAN can be long; identities are map keys and log fields). */
export const PEER_IDENTITY_CHARS_MAX = 256;

/** The identity of a certificate's subject (see the file comment), or null when it names none. */
export function certificateIdentity(cert: Pick<PeerCertificate, 'subject' | 'subjectaltname'> | null | undefined): string | null {
  if (!cert || !cert.subject) return null;
  const san = cert.subjectaltname ?? '';
  for (const part of san.split(',')) {
    const m = /^\s*URI:(.+)$/.exec(part);
    if (m) return m[1]!.trim().slice(0, PEER_IDENTITY_CHARS_MAX);
  }
  const cn = cert.subject.CN;
  const first = Array.isArray(cn) ? cn[0] : cn;
  return first ? first.slice(0, PEER_IDENTITY_CHARS_MAX) : null;
}

/** The verified identity of a TLS peer, or null (no certificate, not verified, or not TLS). */
export function peerIdentity(socket: { authorized?: boolean; getPeerCertificate?: TLSSocket['getPeerCertificate'] }): string | null {
  if (socket.authorized !== true || typeof socket.getPeerCertificate !== 'function') return null;
  return certificateIdentity(socket.getPeerCertificate(false));
}

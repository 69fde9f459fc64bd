/**
 * The interface every TLS endpoint (broker listener, gateway, mesh TCP, etcd client, the client
 * library) reads its certificates through, so a reload reaches them all the same way. The one
 * implementation here reads files and watches them (file-tls-material.ts); a test can hand in a
 * fixed one.
 */
import type { ConnectionOptions, SecureContext, SecureContextOptions } from 'node:tls';

/** Reload figures of one material. */
export interface TlsReloadStats {
  /** Changes applied since start. */
  reloads: number;
  /** Changes refused (bad files); the material in force stayed. */
  failures: number;
  /** The last refusal's reason, null after a good reload. */
  lastError: string | null;
  /** Subject of the certificate in force ('' for a client without one). */
  subject: string;
  /** When that certificate expires (ms since the epoch; Infinity without one). */
  validToMs: number;
}

/** Certificates, key and trusted CAs of one endpoint, as they are now. */
export interface TlsMaterial {
  /** What a server's `createServer` / `setSecureContext` takes (cert, key, ca, minVersion). */
  serverOptions(): SecureContextOptions;
  /** What `tls.connect` takes for a new client connection (the current secure context and the floor). */
  clientOptions(): ConnectionOptions;
  /** The current secure context (what `clientOptions` carries). */
  secureContext(): SecureContext;
  /** Calls `listener` after each applied change; returns the function that removes it. */
  onChange(listener: () => void): () => void;
  /** Reload figures. */
  readonly stats: TlsReloadStats;
  /** Stops watching the files. */
  close(): void;
}

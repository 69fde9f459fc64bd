/**
 * TLS for every edgeq link: certificate files loaded into a secure context (TLS 1.3 floor by
 * default), reloaded when they change without a restart, for servers (`followReloads`) and
 * clients (`clientOptions()` at each new connection); the identity a client certificate proves.
 */
export { TLS_MIN_VERSION_DEFAULT, parseTlsClientAuth, parseTlsMinVersion, tlsFilesFromFlags, type TlsClientAuth, type TlsFilesConfig, type TlsMinVersion } from './tls-config.ts';
export type { TlsMaterial, TlsReloadStats } from './tls-material.ts';
export {
  FileTlsMaterial,
  TLS_FILE_BYTES_MAX,
  TLS_POLL_INTERVAL_MS_DEFAULT,
  TLS_RELOAD_DEBOUNCE_MS_DEFAULT,
  type FileTlsMaterialOptions,
} from './file-tls-material.ts';
export { followReloads, tlsServerOptions, type SecureContextTarget } from './tls-server.ts';
export { certificateIdentity, peerIdentity, PEER_IDENTITY_CHARS_MAX } from './peer-identity.ts';
export { registerTlsMetrics } from './tls-metrics.ts';

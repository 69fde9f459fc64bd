/**
 * The binary protocol: frames, the API table with version negotiation, the protobuf messages of
 * edgeq.proto, and the one client-side connection (framing, correlation ids, timeouts) that the
 * client library and the broker's replica fetcher share. Only the connection touches a socket,
 * and only through an injected `SocketFactory`; the broker's server side owns its own sockets.
 */
export * from './frame.ts';
export * from './api.ts';
export * from './codec.ts';
export * from './messages.ts';
export { messageType, protoRoot, PROTO_PATH } from './schema.ts';
export { writeCoalesced } from './coalesced-write.ts';
export { GATEWAY_CLIENT_ID, INTERNAL_CLIENT_ID_PREFIX, internalClientId, isInternalClientId } from './client-id.ts';
export {
  Connection,
  CONNECTION_DEFAULTS,
  parseAddress,
  tcpSocketFactory,
  tlsSocketFactory,
  type TlsClientSource,
  type BrokerAddress,
  type ConnectionOptions,
  type RequestOptions,
  type SocketFactory,
  type Transport,
} from './connection.ts';

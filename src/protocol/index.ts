/**
 * The binary protocol: frames, the API table with version negotiation, and the protobuf
 * messages of edgeq.proto. Pure: no sockets here (the broker and client own those).
 */
export * from './frame.ts';
export * from './api.ts';
export * from './codec.ts';
export * from './messages.ts';
export { messageType, protoRoot, PROTO_PATH } from './schema.ts';
export { writeCoalesced } from './coalesced-write.ts';

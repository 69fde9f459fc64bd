/**
 * Loads edgeq.proto once and hands out the protobufjs types. protobufjs runs without Long:
 * int64 fields decode to plain numbers, exact up to 2^53, which no offset or timestamp reaches.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

protobuf.util.Long = undefined as unknown as typeof protobuf.util.Long;
protobuf.configure();

export const PROTO_PATH = fileURLToPath(new URL('./edgeq.proto', import.meta.url));
export const PROTO_PACKAGE = 'edgeq.v1';

let root: protobuf.Root | null = null;
const types = new Map<string, protobuf.Type>();

/** The parsed .proto. */
export function protoRoot(): protobuf.Root {
  if (!root) {
    root = protobuf.loadSync(PROTO_PATH);
    root.resolveAll();
  }
  return root;
}

/** The protobufjs type of a message in the edgeq.v1 package, e.g. `ProduceRequest`. */
export function messageType(name: string): protobuf.Type {
  let t = types.get(name);
  if (!t) {
    t = protoRoot().lookupType(`${PROTO_PACKAGE}.${name}`);
    types.set(name, t);
  }
  return t;
}

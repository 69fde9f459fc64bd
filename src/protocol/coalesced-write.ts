/**
 * Socket writes coalesced per tick. A producer answering many HTTP requests, or a broker
 * finishing several pipelined requests at once, writes many small frames in one turn of the event
 * loop; written one by one, each is its own syscall (a profile of the gateway under load showed a
 * fifth of its CPU in them). Corking the socket for the rest of the tick turns them into one
 * writev. Order is kept: corking only delays the flush to the end of the tick.
 */
import type { Duplex } from 'node:stream';

function uncork(socket: Duplex): void {
  socket.uncork();
}

/** Writes `chunk` to `socket`, flushed together with every other write of this tick. */
export function writeCoalesced(socket: Duplex, chunk: Uint8Array, cb?: (err?: Error | null) => void): void {
  if (socket.writableCorked === 0) {
    socket.cork();
    process.nextTick(uncork, socket);
  }
  socket.write(chunk, cb);
}

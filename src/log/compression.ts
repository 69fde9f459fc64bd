/**
 * Per-batch compression codecs. The records section of a batch is compressed as a whole; the
 * header stays plain so the broker can validate, index and serve a batch without decompressing.
 *
 * Libraries: `snappy` and `lz4-napi` (napi-rs, prebuilt, sync and async APIs) and
 * `@mongodb-js/zstd` 1.x (prebuilt, async only). Small inputs use the sync calls: a hop to the
 * libuv thread pool costs more than compressing a few KiB.
 */
import * as snappy from 'snappy';
import * as lz4 from 'lz4-napi';
import * as zstd from '@mongodb-js/zstd';
import { EdgeqError } from '../core/errors.ts';

/** Codec ids as stored in bits 0-2 of the batch attributes. Never renumber. */
export const CompressionCodec = { none: 0, snappy: 1, lz4: 2, zstd: 3 } as const;
export type CompressionName = keyof typeof CompressionCodec;
export type CompressionId = (typeof CompressionCodec)[CompressionName];

export const COMPRESSION_NAMES = Object.keys(CompressionCodec) as CompressionName[];

/** Inputs below this size are compressed on the calling thread. */
const SYNC_BYTES_MAX = 64 * 1024;
const ZSTD_LEVEL = 3;

/** Name of a codec id, or undefined for ids no codec has. */
export function compressionName(id: number): CompressionName | undefined {
  return COMPRESSION_NAMES.find((name) => CompressionCodec[name] === id);
}

/** Compresses `data` with the codec. */
export async function compress(codec: CompressionId, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case CompressionCodec.none:
      return data;
    case CompressionCodec.snappy:
      return data.length <= SYNC_BYTES_MAX ? snappy.compressSync(data) : snappy.compress(data);
    case CompressionCodec.lz4:
      return data.length <= SYNC_BYTES_MAX ? lz4.compressSync(data) : lz4.compress(data);
    case CompressionCodec.zstd:
      return zstd.compress(data, ZSTD_LEVEL);
    default:
      throw new EdgeqError('UNSUPPORTED_COMPRESSION', `unknown compression codec ${String(codec)}`);
  }
}

/**
 * Decompresses `data`. Corrupt input becomes CORRUPT_BATCH; output larger than
 * `decompressedBytesMax` is refused so a small batch cannot inflate into a huge allocation.
 */
export async function decompress(codec: number, data: Buffer, decompressedBytesMax: number): Promise<Buffer> {
  let out: Buffer;
  try {
    switch (codec) {
      case CompressionCodec.none:
        out = data;
        break;
      case CompressionCodec.snappy:
        out = (data.length <= SYNC_BYTES_MAX
          ? snappy.uncompressSync(data, { asBuffer: true })
          : await snappy.uncompress(data, { asBuffer: true })) as Buffer;
        break;
      case CompressionCodec.lz4:
        out = data.length <= SYNC_BYTES_MAX ? lz4.uncompressSync(data) : await lz4.uncompress(data);
        break;
      case CompressionCodec.zstd:
        out = await zstd.decompress(data);
        break;
      default:
        throw new EdgeqError('UNSUPPORTED_COMPRESSION', `unknown compression codec ${codec}`);
    }
  } catch (err) {
    if (err instanceof EdgeqError) throw err;
    throw new EdgeqError('CORRUPT_BATCH', `records do not decompress (${compressionName(codec) ?? codec})`, {
      cause: err,
    });
  }
  if (out.length > decompressedBytesMax) {
    throw new EdgeqError('CORRUPT_BATCH', `decompressed records are ${out.length} bytes, over ${decompressedBytesMax}`);
  }
  return out;
}

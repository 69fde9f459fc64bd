/**
 * The composition root of the client library: one options object (bootstrap brokers, client id,
 * logger, connection bounds) from which producers, consumers and admins are made. Each gets its
 * own connections (like KafkaJS), so a slow consumer's long polls never delay a producer.
 */
import { silentLogger, type Clock, type Logger } from '../core/index.ts';
import type { SocketFactory, TlsClientSource } from '../protocol/index.ts';
import { Admin, type AdminOptions } from './admin.ts';
import { Cluster, type ClusterOptions } from './cluster.ts';
import { Consumer, type ConsumerOptions } from './consumer.ts';
import { Producer, type ProducerOptions } from './producer.ts';
import type { RetryOptions } from './retry.ts';

/** Options shared by everything a client makes. */
export interface ClientOptions {
  /** Bootstrap addresses, `host:port`. */
  brokers: readonly string[];
  clientId?: string;
  logger?: Logger;
  clock?: Clock;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Requests on the wire per connection. */
  inflightRequestsMax?: number;
  metadataMaxAgeMs?: number;
  /** See `ClusterOptions`: one bounded, hedged attempt per broker for lookups any broker answers. */
  metadataAttemptTimeoutMs?: number;
  metadataHedgeDelayMs?: number;
  slowBrokerPenaltyMs?: number;
  reconnectBackoffMs?: number;
  reconnectBackoffMsMax?: number;
  /** Retry bounds for metadata, coordinator and admin requests. */
  retry?: RetryOptions;
  /** Opens the byte stream to a broker (default TCP); tests inject fakes here. */
  socketFactory?: SocketFactory;
  /** Connects over TLS with these options (a `TlsMaterial` of src/tls: the CA, and a certificate for mTLS), read at each new connection. */
  tls?: TlsClientSource;
  /** API key sent in Authenticate on every connection (brokers with auth on need it, or a client certificate they know). */
  apiKey?: string;
}

interface Closable {
  close(): Promise<void>;
}

/** Makes producers, consumers and admins that share options; `close` closes them all. */
export class EdgeqClient {
  private readonly made = new Set<Closable>();

  constructor(readonly options: ClientOptions) {}

  private cluster(extra: Partial<ClusterOptions> = {}): Cluster {
    const o = this.options;
    return new Cluster({
      brokers: o.brokers,
      clientId: o.clientId ?? 'edgeq-client',
      logger: o.logger ?? silentLogger,
      ...(o.clock ? { clock: o.clock } : {}),
      ...(o.connectTimeoutMs !== undefined ? { connectTimeoutMs: o.connectTimeoutMs } : {}),
      ...(o.requestTimeoutMs !== undefined ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
      ...(o.inflightRequestsMax !== undefined ? { inflightRequestsMax: o.inflightRequestsMax } : {}),
      ...(o.metadataMaxAgeMs !== undefined ? { metadataMaxAgeMs: o.metadataMaxAgeMs } : {}),
      ...(o.metadataAttemptTimeoutMs !== undefined ? { metadataAttemptTimeoutMs: o.metadataAttemptTimeoutMs } : {}),
      ...(o.metadataHedgeDelayMs !== undefined ? { metadataHedgeDelayMs: o.metadataHedgeDelayMs } : {}),
      ...(o.slowBrokerPenaltyMs !== undefined ? { slowBrokerPenaltyMs: o.slowBrokerPenaltyMs } : {}),
      ...(o.socketFactory ? { socketFactory: o.socketFactory } : {}),
      ...(o.tls ? { tls: o.tls } : {}),
      ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
      ...(o.reconnectBackoffMs !== undefined ? { reconnectBackoffMs: o.reconnectBackoffMs } : {}),
      ...(o.reconnectBackoffMsMax !== undefined ? { reconnectBackoffMsMax: o.reconnectBackoffMsMax } : {}),
      ...(o.retry ? { retry: o.retry } : {}),
      ...extra,
    });
  }

  private track<T extends Closable>(thing: T): T {
    this.made.add(thing);
    const close = thing.close.bind(thing);
    thing.close = async () => {
      this.made.delete(thing);
      await close();
    };
    return thing;
  }

  /** A new producer. */
  producer(options: ProducerOptions = {}): Producer {
    return this.track(new Producer(this.cluster(), options, { ownsCluster: true }));
  }

  /** A new consumer. */
  consumer(options: ConsumerOptions = {}): Consumer {
    return this.track(new Consumer(this.cluster({ clientId: options.clientId ?? this.options.clientId ?? 'edgeq-consumer' }), options, { ownsCluster: true }));
  }

  /** A new admin client. */
  admin(options: AdminOptions = {}): Admin {
    return this.track(new Admin(this.cluster(), options, { ownsCluster: true }));
  }

  /** Closes everything this client made (producers flush first). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.made].map((m) => m.close()));
  }
}

/** Creates a client for the given bootstrap brokers. */
export function createClient(options: ClientOptions): EdgeqClient {
  return new EdgeqClient(options);
}

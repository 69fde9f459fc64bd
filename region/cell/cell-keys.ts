/**
 * Where a cell keeps its state in the arbiter, under `/edgeq/<cellId>/`:
 *
 *   brokers/<id>               live brokers (bound to each broker's lease)
 *   topics/<name>              topic records with replica assignments (written once, at creation)
 *   partitions/<name>/<p>      leader, leader epoch, ISR, replicas; absent until the state first
 *                              changes (the initial state follows from the topic record), then
 *                              changed by transactions on its revision and the topic's creation
 *   producer-ids               the next free producer-id block
 *   producer-epochs/<id>       bumped producer epochs
 *   recovering/<name>/<p>/<id> broker <id>'s replica may lack records it once held (unclean
 *                              shutdown, tail cut by recovery): topic id, last epoch, log end;
 *                              written by that broker at start, deleted once it caught up
 *   quotas/<tenant>/<topic>    a quota (ratelimit/quota.ts) as JSON; `*` for a wildcard. Written
 *                              by AlterQuotas on any broker, one transaction per request; every
 *                              broker keeps its quota book in step through the watch. Tenant and
 *                              topic names never hold a `/` (TENANT_NAME, QUOTA_TOPIC_NAME).
 */
export class CellKeys {
  readonly root: string;

  constructor(readonly cellId: string) {
    this.root = `/edgeq/${cellId}/`;
  }

  broker(id: number): string {
    return `${this.root}brokers/${id}`;
  }
  topic(name: string): string {
    return `${this.root}topics/${name}`;
  }
  partition(topic: string, p: number): string {
    return `${this.root}partitions/${topic}/${p}`;
  }
  partitionsOf(topic: string): string {
    return `${this.root}partitions/${topic}/`;
  }
  recovering(topic: string, p: number, brokerId: number): string {
    return `${this.root}recovering/${topic}/${p}/${brokerId}`;
  }
  recoveringOf(topic: string): string {
    return `${this.root}recovering/${topic}/`;
  }
  quota(tenant: string, topic: string): string {
    return `${this.root}quotas/${tenant}/${topic}`;
  }
  get producerIds(): string {
    return `${this.root}producer-ids`;
  }
  producerEpoch(id: number): string {
    return `${this.root}producer-epochs/${id}`;
  }

  /** Which kind of key `key` is, with its parts. */
  parse(
    key: string,
  ):
    | { kind: 'broker'; id: number }
    | { kind: 'topic'; name: string }
    | { kind: 'partition'; topic: string; partition: number }
    | { kind: 'producer-epoch'; id: number }
    | { kind: 'recovering'; topic: string; partition: number; id: number }
    | { kind: 'quota'; tenant: string; topic: string }
    | { kind: 'other' } {
    if (!key.startsWith(this.root)) return { kind: 'other' };
    const rest = key.slice(this.root.length).split('/');
    if (rest[0] === 'brokers' && rest.length === 2) return { kind: 'broker', id: Number(rest[1]) };
    if (rest[0] === 'topics' && rest.length === 2) return { kind: 'topic', name: rest[1]! };
    if (rest[0] === 'partitions' && rest.length === 3) return { kind: 'partition', topic: rest[1]!, partition: Number(rest[2]) };
    if (rest[0] === 'producer-epochs' && rest.length === 2) return { kind: 'producer-epoch', id: Number(rest[1]) };
    if (rest[0] === 'recovering' && rest.length === 4) return { kind: 'recovering', topic: rest[1]!, partition: Number(rest[2]), id: Number(rest[3]) };
    if (rest[0] === 'quotas' && rest.length === 3) return { kind: 'quota', tenant: rest[1]!, topic: rest[2]! };
    return { kind: 'other' };
  }
}

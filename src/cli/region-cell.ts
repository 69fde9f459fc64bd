/**
 * The region's cell as the mesh's catalogue of global topics needs it, over the gateway's admin
 * client: validate a definition, list the user topics with their scope, create a global topic
 * (config `scope=global`), delete one, and tell whether a topic holds any record.
 */
import type { Admin } from '../client/index.ts';
import { isEdgeqError } from '../core/index.ts';
import type { GlobalTopicDef, LocalTopic, RegionCell } from '../../gossip/region/index.ts';

/** Topics described per request while listing (bounds one DescribeConfigs answer). */
const DESCRIBE_BATCH_MAX = 100;

const withScope = (def: GlobalTopicDef) => ({
  name: def.name,
  partitions: def.partitions,
  ...(def.replicationFactor !== undefined ? { replicationFactor: def.replicationFactor } : {}),
  config: { ...def.config, scope: 'global' },
});

/** A RegionCell over an admin client. */
export class AdminRegionCell implements RegionCell {
  constructor(private readonly admin: Admin) {}

  async validate(def: GlobalTopicDef): Promise<void> {
    await this.admin.createTopics([withScope(def)], { validateOnly: true });
  }

  async topics(): Promise<LocalTopic[]> {
    const names = await this.admin.listTopics();
    const out: LocalTopic[] = [];
    for (let i = 0; i < names.length; i += DESCRIBE_BATCH_MAX) {
      const batch = names.slice(i, i + DESCRIBE_BATCH_MAX);
      let described;
      try {
        described = await this.admin.describeTopics(batch);
      } catch (err) {
        // A topic deleted between the listing and the describe: the next reconcile sees it gone.
        if (isEdgeqError(err, 'UNKNOWN_TOPIC_OR_PARTITION')) continue;
        throw err;
      }
      for (const d of described) {
        out.push({ name: d.name, partitions: d.partitions.length, config: d.config, scope: d.config['scope'] === 'global' ? 'global' : 'local', createdAtMs: d.createdAtMs });
      }
    }
    return out;
  }

  async create(def: GlobalTopicDef): Promise<void> {
    await this.admin.createTopics([withScope(def)]);
  }

  async delete(name: string): Promise<void> {
    await this.admin.deleteTopics([name]);
  }

  async isEmpty(name: string): Promise<boolean> {
    const latest = await this.admin.listOffsets(name, { spec: 'latest' });
    return latest.every((p) => p.offset <= 0);
  }
}

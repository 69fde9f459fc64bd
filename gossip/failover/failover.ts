/**
 * `POST /v1/groups/{g}/failover` `{"from": region}`: moves a group's position here from the region
 * it consumed in. Refused, with nothing written, when `from` is this region (400) or not a region
 * the mesh knows (404), when `from` never published the group (404), and when the group has live
 * members here (409: moving the position under them would repeat or skip records). Otherwise the
 * old region's last published position is translated now, stored in `__geo.<from>.<g>` and copied
 * into the group's own commits, each with the metadata its consumers filter by.
 */
import { EdgeqError, isEdgeqError } from '../../src/core/index.ts';
import type { GeoCell } from './geo-cell.ts';
import { toCommits, type GroupTranslator, type TranslatedPartition } from './group-translator.ts';

/** The answer of a failover. */
export interface FailoverResult {
  group: string;
  from: string;
  partitions: TranslatedPartition[];
}

export interface FailoverDeps {
  self: string;
  otherRegions: () => string[];
  translator: GroupTranslator;
  cell: GeoCell;
}

export async function failoverGroup(d: FailoverDeps, group: string, from: string): Promise<FailoverResult> {
  if (from === d.self) throw new EdgeqError('INVALID_ARGUMENT', `"from" names this region (${from}): a failover moves a group here from another region`, { details: { field: 'from', region: from } });
  if (!d.otherRegions().includes(from)) throw new EdgeqError('NOT_FOUND', `region "${from}" is not known to the mesh`, { details: { region: from } });
  if (!d.translator.entryOf(from, group)) throw new EdgeqError('NOT_FOUND', `region ${from} never published a position of group "${group}"`, { details: { region: from, group } });
  const live = await d.cell.liveMembers(group);
  if (live > 0) throw notEmpty(group, live);
  const partitions = (await d.translator.store(from, group)) ?? [];
  try {
    await d.cell.commit(group, toCommits(from, partitions));
  } catch (err) {
    // A member joined between the check and the commit: the coordinator refuses simple commits then.
    if (isEdgeqError(err) && err.code === 'UNKNOWN_MEMBER_ID') throw notEmpty(group, 1);
    throw err;
  }
  return { group, from, partitions };
}

function notEmpty(group: string, members: number): EdgeqError {
  return new EdgeqError('GROUP_NOT_EMPTY', `group "${group}" has ${members} live member(s) here: stop them before failing the group over`, { details: { group, members } });
}

// Proves the drill report store: ids follow their pattern (a path in an id is refused), a report and a progress file are written under their names through a temporary file, a finished drill replaces its progress, the list is newest first and skips (counts) an unreadable file, a corrupt report is a typed error on get, and the store keeps at most DRILL_REPORTS_MAX reports.
import { afterAll, describe, expect, it } from 'vitest';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DrillReport } from '../report/index.ts';
import { cleanupTempDirs, tempDir } from '../../test/helpers/tmp.ts';
import { DrillStore, DRILL_ID, DRILL_REPORTS_MAX } from './store.ts';

afterAll(cleanupTempDirs);

const report = (scenario: string, startedAt: string, verdict: 'pass' | 'fail' = 'pass'): DrillReport => ({
  scenario, region: 'us-east', seed: 1, startedAt, faultAt: null, healAt: null, detectMs: 10, recoverMs: 20, convergeMs: 30,
  unavailableMs: { 'us-east': 0 }, acked: 5, lost: 0, duplicates: 0, reordered: 0, indeterminate: { total: 0, found: 0 }, divergentOffsets: 0, timeline: [], verdict, reasons: [],
});

describe('DrillStore', () => {
  it('makes ids from the UTC time, the scenario and 4 hex, and refuses any other id', async () => {
    const id = DrillStore.newId('leader-kill', Date.UTC(2026, 11, 1, 12, 34, 56), '0a1b');
    expect(id).toBe('20261201T123456-leader-kill-0a1b');
    expect(DRILL_ID.test(id)).toBe(true);
    const store = new DrillStore('/nonexistent');
    for (const scenario of ['../etc', 'Leader-kill', '', 'a/b']) expect(() => DrillStore.newId(scenario, 0, '0000'), scenario).toThrow(/drill id/);
    for (const bad of ['../etc/passwd', '20261201T123456-leader-kill-0a1b/../../x', '20261201T123456-Leader-kill-0a1b', '']) {
      await expect(store.get(bad), bad).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(store.save(bad, report('x', '')), bad).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });

  it('writes progress, then the report in its place, and reads them back', async () => {
    const dir = join(await tempDir('edgeq-drill-store-'), 'drills');
    const store = new DrillStore(dir);
    const id = '20261201T120000-leader-kill-0001';
    await expect(store.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await store.saveProgress(id, { phase: 'fault', elapsedMs: 1200, acked: 40, scenario: 'leader-kill', region: 'us-east', startedAt: '2026-12-01T12:00:00.000Z' });
    expect(await readdir(dir)).toEqual([`${id}.progress.json`]);
    expect(await store.get(id)).toMatchObject({ id, state: 'running', progress: { phase: 'fault', acked: 40 } });
    expect((await store.list()).drills).toEqual([expect.objectContaining({ id, state: 'running', verdict: null, scenario: 'leader-kill' })]);
    await store.save(id, report('leader-kill', '2026-12-01T12:00:00.000Z'));
    expect(await readdir(dir)).toEqual([`${id}.json`]);
    expect(JSON.parse(await readFile(join(dir, `${id}.json`), 'utf8'))).toEqual(report('leader-kill', '2026-12-01T12:00:00.000Z'));
    expect(await store.get(id)).toEqual({ id, state: 'done', report: report('leader-kill', '2026-12-01T12:00:00.000Z') });
  });

  it('lists newest first, skips and counts an unreadable file, and a corrupt one is a typed error on get', async () => {
    const dir = await tempDir('edgeq-drill-store-');
    const store = new DrillStore(dir);
    await store.save('20261201T110000-broker-kill-0001', report('broker-kill', '2026-12-01T11:00:00.000Z'));
    await store.save('20261201T130000-gateway-kill-0002', report('gateway-kill', '2026-12-01T13:00:00.000Z', 'fail'));
    await writeFile(join(dir, '20261201T120000-leader-kill-0003.json'), '{"half');
    await writeFile(join(dir, 'notes.txt'), 'not a drill');
    const { drills, unreadable } = await store.list();
    expect(drills.map((d) => [d.id, d.verdict])).toEqual([
      ['20261201T130000-gateway-kill-0002', 'fail'],
      ['20261201T110000-broker-kill-0001', 'pass'],
    ]);
    expect(unreadable).toBe(1);
    await expect(store.get('20261201T120000-leader-kill-0003')).rejects.toMatchObject({ code: 'INVALID_DATA' });
    expect(await new DrillStore(join(dir, 'absent')).list()).toEqual({ drills: [], unreadable: 0 });
  });

  it(`keeps at most ${DRILL_REPORTS_MAX} reports, dropping the oldest`, async () => {
    const dir = await tempDir('edgeq-drill-store-');
    const store = new DrillStore(dir);
    const ids = Array.from({ length: DRILL_REPORTS_MAX + 3 }, (_, i) => `20261201T${String(100000 + i).padStart(6, '0')}-chaos-${(i % 65536).toString(16).padStart(4, '0')}`);
    for (const id of ids) await store.save(id, report('chaos', '2026-12-01T10:00:00.000Z'));
    const kept = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
    expect(kept).toHaveLength(DRILL_REPORTS_MAX);
    expect(kept[0]).toBe(`${ids[3]}.json`);
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

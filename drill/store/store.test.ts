// Proves the drill report store writes what it says byte for byte (through hidden temporary files renamed into place), keeps at most DRILL_REPORTS_MAX drills (the oldest removed), refuses ids that are not drill ids before any path is built, and skips (and counts) a corrupt file in the list while `get` answers it with a typed error.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../../src/core/index.ts';
import type { DrillReport } from '../report/index.ts';
import { checkDrillId, DrillStore, DRILL_REPORTS_MAX, newDrillId, saveDrill, saveDrillProgress } from './index.ts';

/** 2026-03-04T05:06:07Z */
const T0 = Date.UTC(2026, 2, 4, 5, 6, 7);

function report(over: Partial<DrillReport> = {}): DrillReport {
  return {
    scenario: 'broker-kill', region: 'us-east', seed: 7, startedAt: new Date(T0).toISOString(), faultAt: null, healAt: null,
    detectMs: 120, recoverMs: 340, convergeMs: 900, unavailableMs: { 'us-east': 340 }, acked: 1000, lost: 0, duplicates: 0, reordered: 0,
    indeterminate: { total: 0, found: 0 }, divergentOffsets: 0, timeline: [], verdict: 'pass', reasons: [], ...over,
  };
}

const codeOf = async (p: Promise<unknown>) => p.then(() => 'resolved', (e: unknown) => (e instanceof EdgeqError ? e.code : String(e)));

let dir: string;
let store: DrillStore;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeq-drill-store-'));
  store = new DrillStore(join(dir, 'drills'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('drill ids', () => {
  it('are <yyyymmddThhmmss>-<scenario>-<4 hex> in UTC, the hex from the random source', () => {
    expect(newDrillId('leader-kill', T0, () => 0)).toBe('20260304T050607-leader-kill-0000');
    expect(newDrillId('leader-kill', T0, () => 0.999999999)).toBe('20260304T050607-leader-kill-ffff');
    expect(newDrillId('chaos', T0, () => 0.5)).toBe('20260304T050607-chaos-8000');
    expect(checkDrillId('20260304T050607-leader-kill-0000')).toEqual({ scenario: 'leader-kill', startedAt: '2026-03-04T05:06:07.000Z' });
  });

  it('refuse what is not a drill id or scenario: INVALID_ARGUMENT, before any path is built', async () => {
    for (const bad of ['../etc/passwd', '20260304T050607-x-00/0', '20260304T050607-../../x-0000', '20260304T050607-Broker-0000', '20260304T050607-x-000g', '', 'x'.repeat(500), '20260304T050607-x-0000\n']) {
      expect(() => checkDrillId(bad), JSON.stringify(bad)).toThrow(EdgeqError);
      expect(await codeOf(store.get(bad))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.save(bad, report()))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.saveProgress(bad, { state: 'running', phase: 'warmup', elapsedMs: 1, acked: 0 }))).toBe('INVALID_ARGUMENT');
    }
    expect(() => newDrillId('../x', T0)).toThrow(/scenario/);
    // Nothing was written anywhere for them: not even the folder.
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('DrillStore', () => {
  it('writes the report as pretty JSON under <id>.json, via a hidden tmp file renamed into place, and drops the progress file', async () => {
    const id = newDrillId('broker-kill', T0, () => 0.25);
    await store.saveProgress(id, { state: 'running', phase: 'fault', elapsedMs: 1500, acked: 42, detail: 'killed us-east/broker-2' });
    expect(await readdir(store.dir)).toEqual([`${id}.progress.json`]);
    expect(await readFile(join(store.dir, `${id}.progress.json`), 'utf8')).toBe('{"state":"running","phase":"fault","elapsedMs":1500,"acked":42,"detail":"killed us-east/broker-2"}\n');
    expect(await store.get(id)).toEqual({ id, state: 'running', progress: { state: 'running', phase: 'fault', elapsedMs: 1500, acked: 42, detail: 'killed us-east/broker-2' } });

    await store.save(id, report());
    expect(await readdir(store.dir)).toEqual([`${id}.json`]);
    expect(await readFile(join(store.dir, `${id}.json`), 'utf8')).toBe(`${JSON.stringify(report(), null, 2)}\n`);
    expect(await store.get(id)).toEqual({ id, state: 'done', report: report() });
  });

  it('never reads a temporary file: a write torn before its rename leaves the old file as it was', async () => {
    const id = newDrillId('broker-kill', T0, () => 0);
    await store.save(id, report({ acked: 1 }));
    // What a crash between the write and the rename leaves behind: a hidden tmp with half a report.
    await writeFile(join(store.dir, `.${id}.json.999.1.tmp`), '{"scenario": "broker-k');
    expect((await store.get(id)).report?.acked).toBe(1);
    const listed = await store.list();
    expect(listed).toEqual({ drills: [expect.objectContaining({ id, state: 'done' })], corrupt: 0 });
  });

  it('lists newest first: reports with their figures, running drills from their id', async () => {
    const older = newDrillId('link-degrade', T0, () => 0);
    const running = newDrillId('leader-kill', T0 + 60_000, () => 0);
    const failed = newDrillId('region-kill', T0 + 1_000, () => 0);
    await store.save(older, report({ scenario: 'link-degrade', region: null, detectMs: null }));
    await store.save(failed, report({ scenario: 'region-kill', verdict: 'fail', lost: 3, reasons: ['3 acknowledged records lost'] }));
    await saveDrillProgress(dir, running, { phase: 'warmup', elapsedMs: 10, acked: 0 });
    const { drills, corrupt } = await store.list();
    expect(corrupt).toBe(0);
    expect(drills).toEqual([
      { id: running, scenario: 'leader-kill', region: null, startedAt: '2026-03-04T05:07:07.000Z', verdict: null, state: 'running', detectMs: null, recoverMs: null, convergeMs: null, lost: null },
      { id: failed, scenario: 'region-kill', region: 'us-east', startedAt: new Date(T0).toISOString(), verdict: 'fail', state: 'done', detectMs: 120, recoverMs: 340, convergeMs: 900, lost: 3 },
      { id: older, scenario: 'link-degrade', region: null, startedAt: new Date(T0).toISOString(), verdict: 'pass', state: 'done', detectMs: null, recoverMs: 340, convergeMs: 900, lost: 0 },
    ]);
  });

  it('a drill that ended without a report (phase done) is done, with its progress', async () => {
    const id = newDrillId('gateway-kill', T0, () => 0);
    await store.saveProgress(id, { state: 'running', phase: 'done', elapsedMs: 5, acked: 0, detail: 'exited with code 2' });
    expect(await store.get(id)).toMatchObject({ id, state: 'done', progress: { detail: 'exited with code 2' } });
    expect(await codeOf(store.saveProgress(id, { state: 'done', phase: 'done', elapsedMs: 5, acked: 0 } as never))).toBe('INVALID_ARGUMENT');
  });

  it('a corrupt file: skipped and counted in the list, STORAGE_ERROR in get; an absent id is NOT_FOUND', async () => {
    const good = newDrillId('broker-kill', T0, () => 0);
    const torn = newDrillId('broker-kill', T0, () => 0.5);
    const wrong = newDrillId('broker-kill', T0, () => 0.75);
    await store.save(good, report());
    await writeFile(join(store.dir, `${torn}.json`), '{"scenario": "broker-k');
    await writeFile(join(store.dir, `${wrong}.progress.json`), '{"state":"running"}');
    // Not drill files at all: ignored, not counted.
    await writeFile(join(store.dir, 'notes.json'), 'hello');
    expect(await store.list()).toEqual({ drills: [expect.objectContaining({ id: good })], corrupt: 2 });
    await expect(store.get(torn)).rejects.toMatchObject({ code: 'STORAGE_ERROR', retriable: false, message: expect.stringContaining('corrupt') });
    await expect(store.get(wrong)).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    await expect(store.get(newDrillId('broker-kill', T0, () => 0.1))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it(`keeps the newest ${DRILL_REPORTS_MAX}: a save past the bound removes the oldest drill's report, progress and log`, async () => {
    const ids = Array.from({ length: DRILL_REPORTS_MAX + 2 }, (_, i) => newDrillId('broker-kill', T0 + i * 1000, () => 0));
    // The oldest has a log beside it (a drill the gateway started): it goes with it.
    await store.saveProgress(ids[0]!, { state: 'running', phase: 'connect', elapsedMs: 0, acked: 0 });
    await writeFile(store.logPath(ids[0]!), 'log\n');
    for (const id of ids) await saveDrill(dir, id, report());
    const names = await readdir(store.dir);
    expect(names.filter((n) => n.endsWith('.json'))).toHaveLength(DRILL_REPORTS_MAX);
    expect(names).not.toContain(`${ids[0]}.json`);
    expect(names).not.toContain(`${ids[0]}.log`);
    expect(names).not.toContain(`${ids[1]}.json`);
    expect(names).toContain(`${ids[2]}.json`);
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
    const { drills } = await store.list();
    expect(drills).toHaveLength(DRILL_REPORTS_MAX);
    expect(drills[0]!.id).toBe(ids[ids.length - 1]);
  });

  it('an absent folder lists nothing', async () => {
    expect(await new DrillStore(join(dir, 'none')).list()).toEqual({ drills: [], corrupt: 0 });
  });
});

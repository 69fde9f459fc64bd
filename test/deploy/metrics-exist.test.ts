// Proves every metric the alert rules and the Grafana dashboard query exists in the live /metrics
// of a running deployment (`edgeq dev`, two regions of one broker: gateways with their mesh,
// exchange and planner, brokers with their admin port), after a global topic was created and a
// record produced with acks=geo so the exchange has applied something; a name is found by its
// `# TYPE` line (a labelled counter nobody has incremented yet, such as the geo gap counter, is
// registered but has no sample).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Geo } from '../helpers/geo.ts';
import { freeRange, startDevRegions, stopAllDevs, DEV_REGIONS_PORT_SPAN } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

const deployDir = fileURLToPath(new URL('../../deploy/', import.meta.url));

/** Series Prometheus makes itself for every target (not in any /metrics). */
const PROMETHEUS_SYNTHETIC = new Set(['up']);

/** Every series name a Prometheus text exposition offers: per `# TYPE`, with a histogram's and a summary's suffixes. */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

/** The metric names a PromQL expression mentions: edgeq's, and the synthetic ones. */
function namesIn(expr: string): string[] {
  const out = [...expr.matchAll(/\bedgeq_[a-z0-9_]+/g)].map((m) => m[0]);
  if (/\bup\{/.test(expr)) out.push('up');
  return out;
}

/** Every expression of the alert rules and the dashboard, with where it is. */
async function usedExpressions(): Promise<{ where: string; expr: string }[]> {
  const { parse } = await import('yaml');
  const rules = parse(await readFile(join(deployDir, 'prometheus/rules/edgeq.rules.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
  const out = rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert}`, expr: r.expr })));
  const dash = JSON.parse(await readFile(join(deployDir, 'grafana/dashboards/edgeq.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[]; templating: { list: { definition?: string }[] } };
  for (const p of dash.panels) for (const t of p.targets ?? []) out.push({ where: `panel "${p.title}"`, expr: t.expr });
  for (const v of dash.templating.list) if (v.definition) out.push({ where: 'dashboard variable', expr: v.definition });
  // The autoscalers' query names the planner's gauge too.
  out.push({ where: 'KEDA ScaledObject', expr: await readFile(join(deployDir, 'k8s/components/keda/scaledobject.yaml'), 'utf8') });
  return out;
}

/** Bound on the exchange applying one record in the other region after its topic exists (25 ms links, a loaded machine). */
const GEO_MS_MAX = 60_000;

describe('the metrics deploy/ queries', () => {
  it('all exist in the /metrics of a running two-region deployment', async () => {
    const used = await usedExpressions();
    const wanted = new Map<string, string>();
    for (const u of used) for (const n of namesIn(u.expr)) if (!wanted.has(n)) wanted.set(n, u.where);
    // The rules and the dashboard together name well over 20 distinct metrics.
    expect(wanted.size).toBeGreaterThan(20);

    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dev = startDevRegions(await tempDir('edgeq-deploy-metrics-'), base, { regions: '2', brokersPerRegion: 1 });
    const ready = await dev.ready;
    const [a, b] = ready.regions as [(typeof ready.regions)[0], (typeof ready.regions)[0]];
    const geo = new Geo(ready);
    await geo.waitForExchanges(GEO_MS_MAX);
    await geo.createGlobal(a.region, 'deploy-metrics', 1);
    // acks=geo with regions=1: answered once the other region applied it, so its exchange metrics have samples.
    const produced = await geo.produce(a.region, 'deploy-metrics', 0, ['hello'], `?acks=geo&regions=1&timeoutMs=${GEO_MS_MAX}`);
    expect(produced.status, JSON.stringify(produced.json)).toBe(200);

    const exposed = new Set<string>(PROMETHEUS_SYNTHETIC);
    const urls = [a, b].flatMap((r) => [`${r.gateway}/metrics`, ...r.metrics]);
    for (const url of urls) {
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      for (const n of exposedNames(await res.text())) exposed.add(n);
    }
    const missing = [...wanted].filter(([n]) => !exposed.has(n)).map(([n, where]) => `${n} (${where})`);
    expect(missing, 'metrics deploy/ queries that no process exposes').toEqual([]);
    // And the check bites: a name nobody exposes is reported.
    expect(exposed.has('edgeq_no_such_metric_total')).toBe(false);

    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  }, 300_000);
});

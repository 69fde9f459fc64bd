/** The table panels: limiter, cell, mesh, drills. Each renders from one snapshot. */
import { count, esc, ms, rate, time } from './format.ts';
import { meshMap } from './mesh-map.ts';
import type { Snapshot } from './types.ts';

const table = (head: string[], rows: string[]) =>
  `<div class="scroll"><table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('') || `<tr><td colspan="${head.length}" class="muted">none</td></tr>`}</tbody></table></div>`;

const unavailable = (why: { code: string; detail: string }) => `<p class="bad">unavailable: ${esc(why.code)} (${esc(why.detail)})</p>`;

export function limiterPanel(s: Snapshot): string {
  const l = s.limiter;
  if (!l) return '<p class="muted">this gateway runs without an admission limiter</p>';
  const headroom = l.capacityPerSec === null ? null : l.capacityPerSec - l.demandPerSec;
  const head = `<div class="figures">
    <div><span class="label">capacity</span><span class="value" data-figure="limiter-capacity">${rate(l.capacityPerSec)}</span></div>
    <div><span class="label">demand</span><span class="value">${rate(l.demandPerSec)}</span></div>
    <div><span class="label">headroom</span><span class="value ${headroom !== null && headroom < 0 ? 'bad' : ''}">${rate(headroom)}</span></div>
    <div><span class="label">binding signal</span><span class="value">${esc(l.binding ?? 'none')} (pressure ${l.pressure.toFixed(2)})</span></div>
    <div><span class="label">controller</span><span class="value">${esc(l.controller)}</span></div></div>`;
  const rows = l.tenants.map((t) => `<tr><td>${esc(t.tenant)}</td><td>${t.weight}</td><td>${rate(t.demandPerSec)}</td><td>${rate(t.admittedPerSec)}</td><td class="${t.throttledPerSec > 0 ? 'warn' : ''}">${rate(t.throttledPerSec)}</td><td>${rate(t.sharePerSec)}</td></tr>`);
  return head + table(['tenant', 'weight', 'demand', 'admitted', 'refused (429/503)', 'share'], rows);
}

export function cellPanel(s: Snapshot): string {
  if (!s.cell) return '<p class="muted">no cell status</p>';
  if (!s.cell.ok) return unavailable(s.cell);
  const c = s.cell.data;
  const alive = new Map(c.brokers.map((b) => [b.id, b.alive && !c.unreachable.includes(b.id)]));
  const brokers = c.brokers.map((b) => {
    const up = alive.get(b.id);
    return `<tr class="${up ? '' : 'dead'}" data-broker="${b.id}"><td>${b.id}</td><td>${esc(b.host)}:${b.port}</td><td><span class="badge ${up ? 'ok' : 'bad'}">${up ? 'alive' : 'down'}</span></td></tr>`;
  });
  const urp = c.partitions.filter((p) => p.isr.length < p.replicas.length).length;
  const parts = c.partitions.map((p) => {
    const under = p.isr.length < p.replicas.length;
    const leaderless = p.leaderId < 0 || alive.get(p.leaderId) === false;
    return `<tr class="${leaderless ? 'dead' : under ? 'urp' : ''}"><td>${esc(p.topic)}-${p.partition}</td><td>${p.leaderId < 0 ? 'none' : p.leaderId}</td><td>${p.leaderEpoch}</td><td>[${p.isr.join(',')}]</td><td>[${p.replicas.join(',')}]</td><td>${count(p.highWatermark)}</td></tr>`;
  });
  const withLeader = c.partitions.filter((p) => p.leaderId >= 0).length;
  return `<div class="figures"><div><span class="label">brokers alive</span><span class="value" data-figure="brokers-alive">${[...alive.values()].filter(Boolean).length} / ${c.brokers.length}</span></div>
    <div><span class="label">partitions with a leader</span><span class="value">${withLeader} / ${c.partitions.length}</span></div>
    <div><span class="label">under-replicated</span><span class="value ${urp > 0 ? 'warn' : ''}">${urp}</span></div></div>` +
    table(['broker', 'address', 'state'], brokers) + table(['partition', 'leader', 'epoch', 'ISR', 'replicas', 'high watermark'], parts);
}

export function meshPanel(s: Snapshot): string {
  const m = s.mesh;
  if (!m) return '<p class="muted">this gateway runs without the mesh</p>';
  const members = m.members.map((x) => `<tr class="${x.state === 'alive' ? '' : x.state === 'suspect' ? 'urp' : 'dead'}"><td>${esc(x.region)}</td><td>${esc(x.member)}</td><td><span class="badge ${x.state === 'alive' ? 'ok' : 'bad'}">${esc(x.state)}</span></td><td>${Number.isFinite(x.phi) ? x.phi.toFixed(2) : '–'}</td><td>${ms(x.lastHeardMs < 0 ? null : x.lastHeardMs)}</td><td>${ms(x.rttMs)}</td></tr>`);
  const byOrigin = new Map<string, { records: number; ms: number; stalled: number }>();
  for (const r of m.replication) {
    const o = byOrigin.get(r.origin) ?? { records: 0, ms: 0, stalled: 0 };
    o.records += r.lagRecords;
    o.ms = Math.max(o.ms, r.lagMs);
    if (r.stalled) o.stalled++;
    byOrigin.set(r.origin, o);
  }
  const lag = [...byOrigin].map(([origin, o]) => `<tr class="${o.stalled > 0 ? 'urp' : ''}"><td>${esc(origin)}</td><td>${count(o.records, 'records')}</td><td>${ms(o.ms)}</td><td>${o.stalled}</td></tr>`);
  const links = m.exchange.links.map((l) => `<tr class="${l.healthy ? '' : 'dead'}"><td>${esc(l.source)}</td><td><span class="badge ${l.healthy ? 'ok' : 'bad'}">${l.healthy ? 'healthy' : 'down'}</span></td><td>${count(l.bytesPerSec, 'B/s')}</td><td>${count(l.recordsTotal)}</td></tr>`);
  const gaps = m.exchange.gaps.map((g) => `<tr class="dead"><td>${esc(g.origin)}</td><td>${esc(g.topic)}-${g.partition}</td><td>${g.firstMissingOriginOffset}..${g.lastMissingOriginOffset}</td><td>${count(g.records)}</td><td>${time(g.detectedAtMs)}</td></tr>`);
  return meshMap(s) + table(['region', 'member', 'state', 'phi', 'last heard', 'round trip'], members) +
    '<h3>Replication lag per origin (into this region)</h3>' + table(['origin', 'lag', 'lag (time)', 'stalled partitions'], lag) +
    '<h3>Links</h3>' + table(['from', 'state', 'rate', 'records'], links) +
    '<h3>Gaps reported</h3>' + table(['origin', 'partition', 'origin offsets', 'records', 'found'], gaps);
}

export function drillsList(s: Snapshot): string {
  if (!s.drills) return '<p class="muted">this gateway runs without drills</p>';
  if (!s.drills.ok) return unavailable(s.drills);
  const rows = s.drills.data.map((d) => `<tr class="${d.verdict === 'fail' ? 'dead' : ''}"><td>${time(d.startedAt)}</td><td>${esc(d.scenario)}</td><td>${esc(d.region ?? '–')}</td><td>${d.state === 'running' ? '<span class="badge warn">running</span>' : `<span class="badge ${d.verdict === 'pass' ? 'ok' : 'bad'}">${esc(d.verdict ?? '–')}</span>`}</td><td>${ms(d.detectMs)}</td><td>${ms(d.recoverMs)}</td><td>${ms(d.convergeMs)}</td><td>${count(d.lost)}</td></tr>`);
  return table(['started', 'scenario', 'region', 'verdict', 'detect', 'recover', 'converge', 'lost'], rows);
}

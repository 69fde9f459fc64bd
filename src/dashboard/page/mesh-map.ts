/**
 * The mesh as a small graph (SVG): one node per region on a circle, this gateway's region marked,
 * each region's members as dots around its node coloured by state, and a link from this region
 * to every other one labelled with its latency (the median of its members' smoothed probe round
 * trips as this member measures them) and coloured by the best state among its members.
 * Drawn from the snapshot alone: no layout state, so one update is one string.
 */
import { esc, ms } from './format.ts';
import type { Snapshot } from './types.ts';

type Member = NonNullable<Snapshot['mesh']>['members'][number];
type Health = 'alive' | 'suspect' | 'dead';

/** The view box: wide and short, so it scales down to a phone's width without overflowing. */
const W = 420;
const H = 240;
const R = 82;
const NODE_R = 24;
const DOT_R = 5;

const COLOURS: Record<Health, string> = { alive: '#a3be8c', suspect: '#ebcb8b', dead: '#bf616a' };

/** A region's health from its members: alive if one is, else suspect if one is, else dead (dead and left). */
function healthOf(members: readonly Member[]): Health {
  if (members.some((m) => m.state === 'alive')) return 'alive';
  if (members.some((m) => m.state === 'suspect')) return 'suspect';
  return 'dead';
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The link latency to a region: the median smoothed RTT of its members that answer; null with none. */
export function regionRtt(members: readonly Member[]): number | null {
  return median(members.filter((m) => m.state !== 'dead' && m.state !== 'left' && m.rttMs !== null).map((m) => m.rttMs!));
}

export function meshMap(s: Snapshot): string {
  const m = s.mesh;
  if (!m) return '';
  const byRegion = new Map<string, Member[]>();
  for (const x of m.members) byRegion.set(x.region, [...(byRegion.get(x.region) ?? []), x]);
  // This region first, then the others in name order: the layout stays put from one update to the next.
  const self = m.self.region;
  const regions = [self, ...[...byRegion.keys()].filter((r) => r !== self).sort()];
  const at = (i: number) => {
    const a = -Math.PI / 2 + (2 * Math.PI * i) / regions.length;
    return { x: W / 2 + (regions.length === 1 ? 0 : R * 1.6 * Math.cos(a)), y: H / 2 + (regions.length === 1 ? 0 : R * Math.sin(a)) };
  };
  const home = at(0);
  const links: string[] = [];
  const nodes: string[] = [];
  regions.forEach((region, i) => {
    const members = byRegion.get(region) ?? [];
    const health = region === self ? 'alive' : healthOf(members);
    const p = at(i);
    if (i > 0) {
      const rtt = regionRtt(members);
      const mx = (home.x + p.x) / 2;
      const my = (home.y + p.y) / 2;
      links.push(`<g data-link="${esc(region)}" data-state="${health}"><line x1="${home.x.toFixed(1)}" y1="${home.y.toFixed(1)}" x2="${p.x.toFixed(1)}" y2="${p.y.toFixed(1)}" stroke="${COLOURS[health]}" stroke-width="2" ${health === 'alive' ? '' : 'stroke-dasharray="5 4"'}/>` +
        `<text x="${mx.toFixed(1)}" y="${(my - 4).toFixed(1)}" class="rtt" data-rtt="${rtt === null ? '' : rtt.toFixed(1)}">${esc(rtt === null ? '–' : ms(rtt))}</text></g>`);
    }
    const dots = members.map((x, k) => {
      const a = (2 * Math.PI * k) / Math.max(1, members.length) - Math.PI / 2;
      const c = COLOURS[x.state === 'left' ? 'dead' : (x.state as Health)] ?? COLOURS.dead;
      const title = `${x.member}: ${x.state}, phi ${Number.isFinite(x.phi) ? x.phi.toFixed(2) : '–'}, rtt ${ms(x.rttMs)}`;
      return `<circle cx="${(p.x + (NODE_R + 8) * Math.cos(a)).toFixed(1)}" cy="${(p.y + (NODE_R + 8) * Math.sin(a)).toFixed(1)}" r="${DOT_R}" fill="${c}" data-member="${esc(x.member)}" data-state="${esc(x.state)}"><title>${esc(title)}</title></circle>`;
    });
    nodes.push(`<g data-region-node="${esc(region)}" data-state="${health}"><circle cx="${p.x.toFixed(1)}" cy="${p.y.toFixed(1)}" r="${NODE_R}" fill="#2e3440" stroke="${COLOURS[health]}" stroke-width="${region === self ? 3 : 2}"/>` +
      `<text x="${p.x.toFixed(1)}" y="${(p.y + 4).toFixed(1)}" class="node">${esc(region)}</text>${dots.join('')}</g>`);
  });
  return `<svg class="mesh-map" viewBox="0 0 ${W} ${H}" role="img" aria-label="mesh: regions, their members and link latency from ${esc(self)}">${links.join('')}${nodes.join('')}</svg>`;
}

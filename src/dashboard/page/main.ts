/**
 * The capacity dashboard's page: every region's capacity chart, and this gateway's limiter, cell,
 * mesh and drills, updated once a second from `GET /v1/dashboard/stream`, with the history of the
 * chosen range from `GET /v1/dashboard/history`. One update of every panel is timed with the
 * Performance API (`window.edgeqDashboard.updateMs`, the last 600), against a 16 ms budget.
 */
import './style.css';
import { ApiError, getJson, postJson, readStream, setKey } from './api.ts';
import { CapacityChart, emptySeries, FIELDS, trim, type RegionSeries } from './charts.ts';
import { esc, ms, rate, time } from './format.ts';
import { cellPanel, drillsList, limiterPanel, meshPanel } from './panels.ts';
import type { History, Snapshot } from './types.ts';

const RANGES: Record<string, number> = { '5m': 300_000, '1h': 3_600_000, '24h': 86_400_000 };
const SCENARIOS = ['broker-kill', 'leader-kill', 'region-isolate', 'region-kill', 'arbiter-loss', 'link-degrade', 'gateway-kill'];
/** Update timings kept for the page's budget check. */
const TIMINGS_MAX = 600;

interface State {
  range: string;
  region: string; // 'all' or a region's name
  series: Map<string, RegionSeries>;
  charts: Map<string, CapacityChart>;
  last: Snapshot | null;
  stream: AbortController | null;
  drill: { id: string; timer: number } | null;
  /** The range whose history is loaded (null while loading). */
  loaded: string | null;
}

const state: State = { range: '5m', region: 'all', series: new Map(), charts: new Map(), last: null, stream: null, drill: null, loaded: null };
const updateMs: number[] = [];
(window as unknown as { edgeqDashboard: unknown }).edgeqDashboard = { updateMs, state };

const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector<T>(sel)!;

function layout(): void {
  $('#app').innerHTML = `
  <header>
    <h1>edgeq capacity</h1>
    <label>region <select id="region"><option value="all">all regions</option></select></label>
    <span class="ranges">${Object.keys(RANGES).map((r) => `<button data-range="${r}" class="${r === state.range ? 'on' : ''}">${r === '5m' ? 'last 5 min' : r === '1h' ? '1 h' : '24 h'}</button>`).join('')}</span>
    <span id="status" class="muted">connecting…</span>
  </header>
  <form id="key" hidden><label>API key (admin grant) <input id="key-input" type="password" autocomplete="off"></label><button>Use</button><span id="key-why" class="bad"></span></form>
  <section><h2>Capacity per region</h2><div id="charts" class="charts"></div></section>
  <div class="grid">
    <section><h2>Limiter <span class="muted" id="limiter-region"></span></h2><div id="limiter"></div></section>
    <section><h2>Cell</h2><div id="cell"></div></section>
    <section><h2>Mesh</h2><div id="mesh"></div></section>
    <section><h2>Drills</h2>
      <form id="drill-form"><select id="drill-scenario">${SCENARIOS.map((s) => `<option>${s}</option>`).join('')}</select>
      <select id="drill-region"></select><label>for <input id="drill-duration" type="number" min="1" max="3600" value="30" size="4"> s</label><button id="drill-start">Start drill</button></form>
      <div id="drill-progress"></div><div id="drills"></div></section>
  </div>`;
  for (const b of document.querySelectorAll<HTMLButtonElement>('[data-range]')) {
    b.onclick = () => {
      state.range = b.dataset['range']!;
      for (const x of document.querySelectorAll('[data-range]')) x.classList.toggle('on', x === b);
      void loadHistory();
    };
  }
  $<HTMLSelectElement>('#region').onchange = (e) => {
    state.region = (e.target as HTMLSelectElement).value;
    renderCharts();
  };
  $<HTMLFormElement>('#key').onsubmit = (e) => {
    e.preventDefault();
    setKey($<HTMLInputElement>('#key-input').value.trim() || null);
    $('#key').hidden = true;
    void start();
  };
  $<HTMLFormElement>('#drill-form').onsubmit = (e) => {
    e.preventDefault();
    void startDrill();
  };
  window.addEventListener('resize', resizeCharts);
}

function askKey(why: string): void {
  $('#key').hidden = false;
  $('#key-why').textContent = why;
  $('#status').textContent = 'an API key with the admin grant is needed';
}

function chartWidth(): number {
  const host = $('#charts');
  const w = host.clientWidth || window.innerWidth - 32;
  const cols = w >= 1100 && state.charts.size > 1 ? 2 : 1;
  return Math.max(240, Math.floor(w / cols) - 16);
}

/** Each chart's box as wide as its plot (its figures line wraps under it instead of widening it). */
function resizeCharts(): void {
  const w = chartWidth();
  for (const [name, c] of state.charts) {
    c.resize(w);
    const box = $('#charts').querySelector<HTMLElement>(`[data-region="${CSS.escape(name)}"]`);
    if (box) box.style.width = `${w}px`;
  }
}

function seriesOf(region: string): RegionSeries {
  let s = state.series.get(region);
  if (!s) {
    s = emptySeries();
    state.series.set(region, s);
  }
  return s;
}

async function loadHistory(): Promise<void> {
  state.loaded = null;
  try {
    const range = state.range;
    const h = await getJson<History>(`/v1/dashboard/history?range=${range}`);
    if (range !== state.range) return; // another range was chosen meanwhile
    state.series.clear();
    for (const [region, cols] of Object.entries(h.regions)) {
      const s = seriesOf(region);
      s.t = [...cols.t];
      for (const f of FIELDS) s.cols[f] = [...cols[f]];
    }
    state.loaded = range;
    renderCharts();
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) askKey(err.message);
  }
}

function renderCharts(): void {
  const host = $('#charts');
  const names = [...state.series.keys()].sort((a, b) => (a === state.last?.region ? -1 : b === state.last?.region ? 1 : a.localeCompare(b)));
  const shown = names.filter((n) => state.region === 'all' || n === state.region);
  for (const [name, chart] of state.charts) {
    if (!shown.includes(name)) {
      chart.destroy();
      state.charts.delete(name);
      host.querySelector(`[data-region="${CSS.escape(name)}"]`)?.remove();
    }
  }
  for (const name of shown) {
    const had = host.querySelector(`[data-region="${CSS.escape(name)}"]`);
    if (had) host.appendChild(had); // in order: this gateway's region first, then by name
    if (!state.charts.has(name)) {
      const box = document.createElement('div');
      box.className = 'chart';
      box.dataset['region'] = name;
      box.innerHTML = `<h3>${esc(name)}</h3><div class="plot"></div><div class="model"></div>`;
      host.appendChild(box);
      state.charts.set(name, new CapacityChart(name, box.querySelector('.plot')!, chartWidth()));
    }
  }
  resizeCharts();
  drawCharts();
}

function drawCharts(): void {
  for (const [name, chart] of state.charts) {
    const now = state.last?.regions.find((r) => r.region === name);
    chart.draw(seriesOf(name), now?.forecast ?? []);
    const box = $('#charts').querySelector(`[data-region="${CSS.escape(name)}"] .model`);
    if (!box) continue;
    const own = name === state.last?.region ? state.last.model : null;
    const p = now?.point;
    box.innerHTML = `<span>ingress <b data-figure="ingress">${rate(p?.ingress)}</b></span>
      <span>forecast P50 ${rate(p?.p50)} · P10–P90 ${rate(p?.p10)}–${rate(p?.p90)}</span>
      <span>capacity ${rate(p?.capacity)} · ceiling ${rate(p?.ceiling)}</span>
      <span>desired ${p?.brokers ?? '–'} brokers, ${p?.gateways ?? '–'} gateways</span>
      <span>model ${esc(own?.method ?? now?.method ?? 'none')} · <b class="${(own?.mode ?? now?.mode) === 'reactive' ? 'warn' : ''}">${esc(own?.mode ?? now?.mode ?? '–')}</b>${own ? ` · live MASE ${own.liveMase?.toFixed(2) ?? '–'} (backtest ${own.backtestMase?.toFixed(2) ?? '–'}, trained ${time(own.trainedAt)})` : ''}</span>
      ${now?.health ? `<span data-health="${!now.health.cellReady || now.health.brokersAlive < now.health.brokersTotal ? 'bad' : 'ok'}" class="${!now.health.cellReady || now.health.brokersAlive < now.health.brokersTotal ? 'bad' : ''}">cell ${now.health.cellReady ? 'ready' : 'not ready'}, brokers ${now.health.brokersAlive}/${now.health.brokersTotal}, under-replicated ${now.health.underReplicatedPartitions}</span>` : ''}`;
  }
}

function onSnapshot(s: Snapshot): void {
  const t0 = performance.now();
  state.last = s;
  const from = Date.now() - RANGES[state.range]!;
  let added = false;
  for (const r of s.regions) {
    const had = state.series.has(r.region);
    const series = seriesOf(r.region);
    if (!had) added = true;
    const p = r.point;
    if (p && (series.t.length === 0 || p.t > series.t.at(-1)!)) {
      series.t.push(p.t);
      for (const f of FIELDS) series.cols[f].push(p[f] ?? null);
    }
    trim(series, from);
  }
  const select = $<HTMLSelectElement>('#region');
  if (select.options.length !== s.regions.length + 1) {
    select.innerHTML = `<option value="all">all regions</option>${s.regions.map((r) => `<option ${r.region === state.region ? 'selected' : ''}>${esc(r.region)}</option>`).join('')}`;
    $<HTMLSelectElement>('#drill-region').innerHTML = s.regions.map((r) => `<option>${esc(r.region)}</option>`).join('');
  }
  const firstShown = $('#charts').querySelector<HTMLElement>('[data-region]')?.dataset['region'];
  if (added || (firstShown !== undefined && firstShown !== s.region && state.series.has(s.region) && state.region === 'all')) renderCharts();
  else drawCharts();
  $('#limiter-region').textContent = `(${s.region})`;
  $('#limiter').innerHTML = limiterPanel(s);
  $('#cell').innerHTML = cellPanel(s);
  $('#mesh').innerHTML = meshPanel(s);
  $('#drills').innerHTML = drillsList(s);
  $('#status').textContent = `live · ${time(s.t)}`;
  updateMs.push(performance.now() - t0);
  if (updateMs.length > TIMINGS_MAX) updateMs.shift();
}

async function startDrill(): Promise<void> {
  const scenario = $<HTMLSelectElement>('#drill-scenario').value;
  const region = $<HTMLSelectElement>('#drill-region').value;
  const durationS = Number($<HTMLInputElement>('#drill-duration').value);
  if (!window.confirm(`Start the ${scenario} drill in ${region} for ${durationS} s? It injects a real fault into the deployment.`)) return;
  const out = $('#drill-progress');
  try {
    const { id } = await postJson<{ id: string }>('/v1/drills', { scenario, region, durationS });
    out.innerHTML = `<p>drill <code>${esc(id)}</code> started</p>`;
    if (state.drill) clearInterval(state.drill.timer);
    const timer = window.setInterval(() => void followDrill(id), 1_000);
    state.drill = { id, timer };
  } catch (err) {
    const e = err as ApiError;
    out.innerHTML = `<p class="bad">refused: ${esc(e.code)} — ${esc(e.message)}</p>`;
  }
}

async function followDrill(id: string): Promise<void> {
  const out = $('#drill-progress');
  try {
    const d = await getJson<{ state: string; progress?: { phase: string; elapsedMs: number; acked: number; detail?: string }; report?: { verdict: string; detectMs: number | null; recoverMs: number | null; convergeMs: number | null; lost: number; acked: number; reasons?: string[] } }>(`/v1/drills/${encodeURIComponent(id)}`);
    if (d.state === 'running') {
      const p = d.progress;
      out.innerHTML = `<p data-drill-state="running">drill <code>${esc(id)}</code>: ${esc(p?.phase ?? 'starting')} · ${ms(p?.elapsedMs)} · ${p?.acked ?? 0} acknowledged ${p?.detail ? `· ${esc(p.detail)}` : ''}</p>`;
    } else {
      const r = d.report;
      out.innerHTML = `<p data-drill-state="done">drill <code>${esc(id)}</code>: <span class="badge ${r?.verdict === 'pass' ? 'ok' : 'bad'}">${esc(r?.verdict ?? d.state)}</span> detect ${ms(r?.detectMs)} · recover ${ms(r?.recoverMs)} · converge ${ms(r?.convergeMs)} · lost ${r?.lost ?? '–'} of ${r?.acked ?? '–'} acknowledged</p>`;
      if (state.drill?.id === id) {
        clearInterval(state.drill.timer);
        state.drill = null;
      }
    }
  } catch (err) {
    out.innerHTML = `<p class="bad">${esc((err as Error).message)}</p>`;
  }
}

async function start(): Promise<void> {
  state.stream?.abort();
  const ctl = new AbortController();
  state.stream = ctl;
  await loadHistory();
  void readStream(
    '/v1/dashboard/stream',
    ctl.signal,
    (data) => onSnapshot(JSON.parse(data) as Snapshot),
    (s) => {
      if (s === 'open') $('#status').textContent = 'live';
      else if (s === 'retrying') $('#status').textContent = 'reconnecting…';
      else if (s.status === 401 || s.status === 403) askKey(s.message);
      else $('#status').textContent = `stream: ${s.code}`;
    },
  );
}

layout();
// Without a stored key the page tries without one first: a gateway with auth off needs none.
void start();

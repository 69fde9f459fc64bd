/**
 * `edgeq drill <scenario>`: runs a named failure against a running deployment with the checked
 * workload, and says in numbers what happened (issue 16). Exit 0 on pass, 1 on fail, 2 on bad
 * input (checked before anything is injected: the scenario and the numbers first, then the
 * deployment's answer at --control, then the region against it).
 *
 * Progress goes to stderr (one line rewritten in place on a terminal, a line per phase otherwise),
 * the report to stdout (a table, or the JSON with --json), and into the deployment's data folder
 * (`<dataDir>/drills/<id>.json`, listed by the gateways at GET /v1/drills). Ctrl-C heals every
 * fault, restarts what was killed, and ends with a failing report ("interrupted").
 */
import { CommanderError, type Command } from 'commander';
import { EdgeqError } from '../../core/errors.ts';
import { DevControlDriver } from '../../../drill/faults/index.ts';
import { runChecked, type DrillProgress } from '../../../drill/runner/index.ts';
import { checkDrillRequest, planDrill, DRILL_DURATION_S_DEFAULT, DRILL_RATE_DEFAULT } from '../../../drill/scenarios/index.ts';
import { checkDrillId, newDrillId, saveDrill, saveDrillProgress } from '../../../drill/store/index.ts';
import type { DrillReport } from '../../../drill/report/index.ts';
import { CONTROL_PORT_DEFAULT } from '../dev/control-api.ts';

interface DrillFlags {
  region?: string;
  durationS?: string;
  rate?: string;
  seed?: string;
  json?: boolean;
  control?: string;
  apiKey?: string;
  id?: string;
  keepTopics?: boolean;
}

function numberFlag(flag: string, raw: string | undefined, integer: boolean): number | undefined {
  if (raw === undefined) return undefined;
  const text = raw.trim();
  const n = /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    throw new EdgeqError('INVALID_ARGUMENT', `${flag} must be ${integer ? 'a whole number' : 'a number'}, got "${raw}"`, { details: { flag, value: raw } });
  }
  return n;
}

/** A line of progress: rewritten in place on a terminal, one per phase change otherwise. */
function progressWriter(out: NodeJS.WriteStream): (p: DrillProgress) => void {
  let lastPhase = '';
  return (p) => {
    const line = `edgeq drill: ${p.phase.padEnd(8)} ${(p.elapsedMs / 1000).toFixed(1).padStart(6)} s  ${String(p.acked).padStart(7)} acked${p.detail ? `  ${p.detail}` : ''}`;
    if (out.isTTY) out.write(`\r\x1b[2K${line}${p.phase === 'done' ? '\n' : ''}`);
    else if (p.phase !== lastPhase || p.detail) out.write(`${line}\n`);
    lastPhase = p.phase;
  };
}

const ms = (v: number | null) => (v === null ? '-' : `${v} ms`);

/** The human table of a report. */
export function formatReport(r: DrillReport, id: string): string {
  const rows: [string, string][] = [
    ['drill', `${r.scenario}${r.region ? ` in ${r.region}` : ''} (seed ${r.seed}, id ${id})`],
    ['verdict', r.verdict.toUpperCase()],
    ['fault at / healed at', `${r.faultAt ?? '-'} / ${r.healAt ?? '-'}`],
    ['time to detect', ms(r.detectMs)],
    ['time to recover', ms(r.recoverMs)],
    ['time to converge', ms(r.convergeMs)],
    ['unavailable', Object.entries(r.unavailableMs).map(([k, v]) => `${k} ${v} ms`).join(', ') || '-'],
    ['acknowledged', String(r.acked)],
    ['lost', String(r.lost)],
    ['duplicates', String(r.duplicates)],
    ['reordered', String(r.reordered)],
    ['indeterminate (found)', `${r.indeterminate.total} (${r.indeterminate.found})`],
    ['divergent offsets', String(r.divergentOffsets)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
  const events = r.timeline.filter((e) => !e.event.startsWith('limiter')).slice(0, 40);
  return [
    ...lines,
    ...(r.reasons.length > 0 ? ['', '  why it failed:', ...r.reasons.map((x) => `    - ${x}`)] : []),
    '',
    `  timeline (${r.timeline.length} events${events.length < r.timeline.length ? `, first ${events.length} shown` : ''}):`,
    ...events.map((e) => `    ${e.t.slice(11, 23)}  ${e.event.padEnd(16)} ${e.detail}`),
    '',
  ].join('\n');
}

/** Registers `edgeq drill`. */
export function registerDrillCommand(program: Command): void {
  program
    .command('drill <scenario>')
    .description('run a failover drill against a running deployment with a checked workload: broker-kill, leader-kill, region-isolate, region-kill, arbiter-loss, link-degrade, gateway-kill (exit 0 pass, 1 fail, 2 bad input)')
    .option('--region <name>', 'the region the fault targets (default: one picked by the seed)')
    .option('--duration-s <n>', `how long the workload runs, the fault inside it (default ${DRILL_DURATION_S_DEFAULT})`)
    .option('--rate <n>', `workload records/s per region, to each of a global and a local topic (default ${DRILL_RATE_DEFAULT})`)
    .option('--seed <n>', 'seed of the victims and the workload (default random, printed)')
    .option('--json', 'print the JSON report instead of the table')
    .option('--control <url>', `the deployment's control API (default http://127.0.0.1:$EDGEQ_CONTROL_PORT, else ${CONTROL_PORT_DEFAULT})`)
    .option('--api-key <key>', 'API key for the gateways when auth is on (EDGEQ_API_KEY)')
    .option('--id <id>', 'the id the report is saved under (default: time, scenario and 4 hex)')
    .option('--keep-topics', "keep the drill's two topics (by default they are deleted after a passing drill; a failing drill's stay for a diagnosis)")
    .action(async (scenario: string, flags: DrillFlags) => {
      const request = {
        scenario,
        region: flags.region,
        durationS: numberFlag('--duration-s', flags.durationS, true),
        rate: numberFlag('--rate', flags.rate, false),
        seed: numberFlag('--seed', flags.seed, true),
      };
      checkDrillRequest(request);
      if (flags.id !== undefined) {
        try {
          checkDrillId(flags.id);
        } catch (err) {
          throw new EdgeqError('INVALID_ARGUMENT', `--id: ${(err as Error).message}`, { cause: err, details: { flag: '--id' } });
        }
      }
      const control = (flags.control ?? `http://127.0.0.1:${process.env.EDGEQ_CONTROL_PORT ?? CONTROL_PORT_DEFAULT}`).replace(/\/+$/, '');
      const driver = await DevControlDriver.connect(control);
      const deployment = await driver.deployment();
      const plan = planDrill(request, deployment);
      const started = Date.now();
      const id = flags.id ?? newDrillId(plan.scenario, started);
      process.stderr.write(`edgeq drill: ${plan.scenario} in ${plan.region}, ${plan.durationMs / 1000} s at ${plan.rate} records/s per region, seed ${plan.seed}, report ${id}\n`);

      const abort = new AbortController();
      const onSignal = (signal: string) => {
        process.stderr.write(`\nedgeq drill: ${signal}: healing every fault and stopping\n`);
        abort.abort();
      };
      const onInt = () => onSignal('SIGINT');
      const onTerm = () => onSignal('SIGTERM');
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
      const show = progressWriter(process.stderr);
      let saving = Promise.resolve();
      let lastSavedAt = 0;
      try {
        const { report } = await runChecked({
          driver,
          deployment,
          scenario: plan.scenario,
          region: plan.region,
          seed: plan.seed,
          rate: plan.rate,
          durationMs: plan.durationMs,
          faults: plan.faults,
          apiKey: flags.apiKey ?? process.env.EDGEQ_API_KEY ?? null,
          deleteTopics: flags.keepTopics ? 'never' : 'on-pass',
          signal: abort.signal,
          onProgress: (p) => {
            show(p);
            // The progress file is what GET /v1/drills/{id} shows while the drill runs: once a second at most.
            if (Date.now() - lastSavedAt >= 1_000 || p.phase === 'done') {
              lastSavedAt = Date.now();
              saving = saving.then(() => saveDrillProgress(deployment.dataDir, id, p).catch(() => undefined));
            }
          },
        });
        await saving;
        await saveDrill(deployment.dataDir, id, report);
        process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : formatReport(report, id));
        if (report.verdict !== 'pass') throw new CommanderError(1, 'edgeq.drill.failed', `the drill failed: ${report.reasons.join('; ')}`);
      } finally {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
      }
    });
}

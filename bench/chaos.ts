/**
 * The randomized fault campaign (issue 16): `npm run chaos -- --rounds N --seed S [--round-seed X]
 * [--flush-policy sync|interval|os] [--out path] [--keep]`. `--keep` leaves the deployment's data
 * folder (the brokers' logs, each process's log file under <region>/logs/, at the level
 * EDGEQ_TEST_LOG_LEVEL names, default warn) for diagnosis.
 *
 * Starts ONE 3-region deployment (`edgeq dev`, 3 brokers per region, free ports, data in a temp
 * folder, brokers on the power-loss storage and with the flush policy as their default, so the
 * rounds' fresh topics get it), then runs N rounds, each a checked run with 1-3 seeded faults
 * (drill/chaos). Prints one line per round and writes the summary JSON. `--round-seed X` replays
 * one round alone. Ctrl-C aborts the round (which heals), then stops the deployment.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DevControlDriver } from '../drill/faults/index.ts';
import { FLUSH_POLICIES, roundSeedOf, runRound, summarize, type FlushPolicy, type RoundResult } from '../drill/chaos/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../test/helpers/dev-process.ts';

/** Most rounds one campaign runs (1000 rounds ≈ 6 h at ~20 s each). */
const ROUNDS_MAX = 1_000;
/** Bound on every region's mesh exchanging global topics after the deployment is ready. */
const MESH_READY_MS = 120_000;
const MESH_POLL_MS = 500;

function args(argv: string[]) {
  const o: { rounds: number; seed: number; roundSeed: number | null; out: string; policy: FlushPolicy; keep: boolean } = { rounds: 5, seed: Date.now() % 0xffff_ffff, roundSeed: null, out: 'bench/results/chaos.json', policy: 'sync', keep: false };
  const num = (flag: string, v: string | undefined, max: number) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 0 || n > max) throw new Error(`${flag} must be an integer in [0, ${max}], got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    if (a === '--rounds') (o.rounds = num(a, v, ROUNDS_MAX)), i++;
    else if (a === '--seed') (o.seed = num(a, v, 0xffff_ffff)), i++;
    else if (a === '--round-seed') (o.roundSeed = num(a, v, 0xffff_ffff)), i++;
    else if (a === '--out') (o.out = v ?? o.out), i++;
    else if (a === '--keep') o.keep = true;
    else if (a === '--flush-policy') {
      if (!FLUSH_POLICIES.includes(v as FlushPolicy)) throw new Error(`--flush-policy must be one of ${FLUSH_POLICIES.join(', ')}, got ${v}`);
      o.policy = v as FlushPolicy;
      i++;
    } else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

async function meshReady(gateways: string[]): Promise<void> {
  const deadline = Date.now() + MESH_READY_MS;
  for (const g of gateways) {
    for (;;) {
      const body = await fetch(`${g}/v1/mesh`, { signal: AbortSignal.timeout(5_000) }).then((r) => (r.ok ? (r.json() as Promise<{ exchange?: { active?: boolean } }>) : null)).catch(() => null);
      if (body?.exchange?.active) break;
      if (Date.now() > deadline) throw new Error(`${g}'s mesh is not exchanging after ${MESH_READY_MS} ms`);
      await new Promise((r) => setTimeout(r, MESH_POLL_MS));
    }
  }
}

async function main(): Promise<number> {
  const o = args(process.argv.slice(2));
  const seeds = o.roundSeed !== null ? [o.roundSeed] : Array.from({ length: o.rounds }, (_, i) => roundSeedOf(o.seed, i));
  console.log(`chaos: seed ${o.seed}, ${seeds.length} round(s), flush policy ${o.policy}; round seeds ${seeds.join(' ')}`);
  const dir = await mkdtemp(join(tmpdir(), 'edgeq-chaos-'));
  const abort = new AbortController();
  // SIGINT (Ctrl-C) and SIGTERM alike: heal the round under way, then stop the deployment (left
  // to the default, SIGTERM would end this process and leave the deployment running).
  const onSigint = () => {
    console.log('chaos: interrupted: healing, then stopping the deployment');
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  const started = Date.now();
  const rounds: RoundResult[] = [];
  try {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dev = startDevRegions(dir, base, { regions: '3', brokersPerRegion: 3, env: { EDGEQ_FAULT_STORAGE: 'power-loss', EDGEQ_LOG__FLUSH_POLICY: o.policy } });
    const ready = await dev.ready;
    await meshReady(ready.regions.map((r) => r.gateway));
    const driver = await DevControlDriver.connect(ready.control);
    const deployment = await driver.deployment();
    console.log(`chaos: deployment ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${dir}, fault storage ${deployment.faultStorage})`);
    for (const [i, roundSeed] of seeds.entries()) {
      if (abort.signal.aborted) break;
      const r = await runRound({ driver, deployment, roundSeed, policy: o.policy, signal: abort.signal });
      rounds.push(r);
      const rep = r.run.report;
      console.log(
        `round ${i + 1}/${seeds.length} seed ${roundSeed}: ${r.verdict.verdict.toUpperCase()} [${r.faults}] acked ${rep.acked} lost ${r.verdict.lost}${r.verdict.lostExcused ? ` (+${r.verdict.lostExcused} excused)` : ''} dup ${rep.duplicates} reord ${rep.reordered} div ${rep.divergentOffsets}` +
          ` detect ${rep.detectMs ?? '-'} recover ${rep.recoverMs ?? '-'} converge ${rep.convergeMs ?? '-'} ms; ${(r.elapsedMs / 1000).toFixed(1)} s` +
          (r.verdict.findings.length ? `; ${r.verdict.findings.join('; ')}` : ''),
      );
    }
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    const summary = summarize(o.seed, o.policy, rounds, Date.now() - started);
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, `${JSON.stringify(summary, null, 2)}\n`);
    console.log(`chaos: ${summary.rounds} rounds, ${summary.failedRounds.length} failed, lost ${summary.lost}, divergent ${summary.divergentOffsets}, reordered ${summary.reordered}, duplicates ${summary.duplicates}; ${summary.minutes} min; ${o.out}`);
    await stopAllDevs();
    if (o.keep) console.log(`chaos: kept the deployment's data and logs in ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  const s = rounds.filter((r) => r.verdict.verdict === 'fail').length;
  return s === 0 && !abort.signal.aborted ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`chaos: ${(err as Error).stack ?? err}`);
    process.exit(2);
  },
);

/**
 * The `edgeq` command line. Each subcommand lives in its own file under commands/ and registers
 * itself on the program; this file only wires them and turns errors into exit codes.
 */
import { Command, CommanderError } from 'commander';
import { EdgeqError } from '../core/errors.ts';

/** A subcommand's registration, loaded only when it is needed. */
type Registrar = (program: Command) => void;

/**
 * Every top-level command and the module that registers it. A process loads only the command it
 * runs: a broker has no use for TensorFlow.js (0.6 s to import) or the drill runner, and the
 * local deployment starts a dozen such processes at once on two cores.
 */
const COMMANDS: Readonly<Record<string, () => Promise<Registrar>>> = {
  log: async () => (await import('./commands/log.ts')).registerLogCommands,
  topics: async () => (await import('./commands/topics.ts')).registerTopicsCommands,
  produce: async () => (await import('./commands/produce.ts')).registerProduceCommand,
  consume: async () => (await import('./commands/consume.ts')).registerConsumeCommand,
  broker: async () => (await import('./commands/broker.ts')).registerBrokerCommand,
  dev: async () => (await import('./commands/dev.ts')).registerDevCommand,
  arbiter: async () => (await import('./commands/arbiter.ts')).registerArbiterCommand,
  gateway: async () => (await import('./commands/gateway.ts')).registerGatewayCommand,
  forecast: async () => (await import('./commands/forecast.ts')).registerForecastCommands,
  quotas: async () => (await import('./commands/quotas.ts')).registerQuotasCommands,
  drill: async () => (await import('./commands/drill.ts')).registerDrillCommand,
  handoff: async () => (await import('./commands/handoff.ts')).registerHandoffCommand,
};

/**
 * Builds the program with the subcommand `argv` names, or with every subcommand when it names
 * none it knows (help, a version query, a typo: commander then lists them all).
 */
export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = new Command('edgeq')
    .description('edgeq: a multi-region, edge-replicated message queue')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  const first = argv[0];
  const names = first !== undefined && Object.hasOwn(COMMANDS, first) ? [first] : Object.keys(COMMANDS);
  const registrars = await Promise.all(names.map((n) => COMMANDS[n]!()));
  for (const register of registrars) register(program);
  return program;
}

/** Runs the CLI with `argv` (without the node and script entries). */
export async function runCli(argv: string[]): Promise<number> {
  // The client's retry timers do not hold the process open (a server's must not delay its exit),
  // so a command waiting out a retry against an unreachable broker would find the event loop
  // empty and Node would exit with 13 and no word. The command itself keeps the process alive
  // until it has an answer, typed error included.
  const alive = setInterval(() => undefined, 1 << 30);
  try {
    await (await buildProgram(argv)).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof EdgeqError) {
      process.stderr.write(`edgeq: ${err.code}: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`edgeq: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    clearInterval(alive);
  }
}

const isMain = process.argv[1] !== undefined && /(?:bin\/edgeq(?:\.js)?|cli\/main\.ts)$/.test(process.argv[1]);
if (isMain) {
  const code = await runCli(process.argv.slice(2));
  process.exitCode = code;
}

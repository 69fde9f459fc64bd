/**
 * The `edgeq` command line. Each subcommand lives in its own file under commands/ and registers
 * itself on the program; this file only wires them and turns errors into exit codes.
 */
import { Command, CommanderError } from 'commander';
import { EdgeqError } from '../core/errors.ts';
import { registerBrokerCommand } from './commands/broker.ts';
import { registerDevCommand } from './commands/dev.ts';
import { registerArbiterCommand } from './commands/arbiter.ts';
import { registerLogCommands } from './commands/log.ts';
import { registerTopicsCommands } from './commands/topics.ts';
import { registerProduceCommand } from './commands/produce.ts';
import { registerConsumeCommand } from './commands/consume.ts';
import { registerGatewayCommand } from './commands/gateway.ts';
import { registerForecastCommands } from './commands/forecast.ts';
import { registerQuotasCommands } from './commands/quotas.ts';
import { registerDrillCommand } from './commands/drill.ts';

/** Builds the program with every subcommand. */
export function buildProgram(): Command {
  const program = new Command('edgeq')
    .description('edgeq: a multi-region, edge-replicated message queue')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  registerLogCommands(program);
  registerTopicsCommands(program);
  registerProduceCommand(program);
  registerConsumeCommand(program);
  registerBrokerCommand(program);
  registerDevCommand(program);
  registerArbiterCommand(program);
  registerGatewayCommand(program);
  registerForecastCommands(program);
  registerQuotasCommands(program);
  registerDrillCommand(program);
  return program;
}

/** Runs the CLI with `argv` (without the node and script entries). */
export async function runCli(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof EdgeqError) {
      process.stderr.write(`edgeq: ${err.code}: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`edgeq: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

const isMain = process.argv[1] !== undefined && /(?:bin\/edgeq(?:\.js)?|cli\/main\.ts)$/.test(process.argv[1]);
if (isMain) {
  const code = await runCli(process.argv.slice(2));
  process.exitCode = code;
}

/** The drill's report: its stable JSON schema, the verdict rule and the exit code. */
export { buildReport, exitCodeOf, type DrillOutcome, type DrillReport } from './report.ts';

/** The drill's report: its stable JSON schema, the verdict rule and the exit code. */
export { buildReport, checkFindings, exitCodeOf, type DrillOutcome, type DrillReport } from './report.ts';

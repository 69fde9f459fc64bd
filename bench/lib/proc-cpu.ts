/**
 * CPU time used by other processes, from Linux's /proc/<pid>/stat: utime + stime (fields 14 and
 * 15, in clock ticks, all threads of the process; children not included), converted to ms with
 * the clock tick rate read once from `getconf CLK_TCK`. A bench reads it right before and right
 * after a measured run and divides the difference by the requests completed: CPU ms per request,
 * a figure that does not depend on how busy the machine was (unlike requests/s).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | null = null;

/** Clock ticks per second (`getconf CLK_TCK`), read once; 100 if getconf fails. */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === null) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      ticksPerSecond = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of a process in ms, or null if it cannot be read (gone, not Linux). */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) is in parentheses and may hold spaces: count fields after its last ')'.
    // After it come field 3 (state) onwards, so field k is at index k - 3.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[14 - 3]);
    const stime = Number(rest[15 - 3]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
    return ((utime + stime) * 1000) / clockTicksPerSecond();
  } catch {
    return null;
  }
}

/** A reading of several processes' CPU ms (null where unreadable). */
export type CpuReading = (number | null)[];

export function readCpu(pids: readonly number[]): CpuReading {
  return pids.map(cpuMs);
}

/** CPU ms used between two readings of the same pids, summed; null if any process was unreadable. */
export function cpuDeltaMs(before: CpuReading, after: CpuReading): number | null {
  let sum = 0;
  for (let i = 0; i < before.length; i++) {
    const a = before[i];
    const b = after[i];
    if (a === null || a === undefined || b === null || b === undefined) return null;
    sum += b - a;
  }
  return sum;
}

/**
 * A small bounded Nelder-Mead minimiser (the classic reflect/expand/contract/shrink simplex) for
 * the few smooth, cheap objectives of the baselines (Holt-Winters' three smoothing parameters).
 * Every point is clamped into a box, and the run stops after a named number of iterations.
 */

/** Iterations at most when the caller gives no cap: plenty for three parameters. */
export const NELDER_MEAD_ITERATIONS_MAX = 300;

/** Options of one minimisation. */
export interface NelderMeadOptions {
  /** Stop after this many iterations (default NELDER_MEAD_ITERATIONS_MAX). */
  readonly iterationsMax?: number;
  /** Size of the initial simplex along each axis (default 0.5). */
  readonly step?: number;
  /** Stop when the simplex's objective values span less than this (default 1e-10, relative). */
  readonly tolerance?: number;
  /** Lower bound of every coordinate (default −Infinity). */
  readonly lower?: number;
  /** Upper bound of every coordinate (default +Infinity). */
  readonly upper?: number;
}

/** The best point found, its value, and the iterations it took. */
export interface NelderMeadResult {
  readonly x: number[];
  readonly value: number;
  readonly iterations: number;
  /** True when the tolerance was met before the iteration cap. */
  readonly converged: boolean;
}

/** Minimises `f` from `x0`; NaN values count as +Infinity so a bad region is simply avoided. */
export function nelderMead(f: (x: readonly number[]) => number, x0: readonly number[], options: NelderMeadOptions = {}): NelderMeadResult {
  const iterationsMax = options.iterationsMax ?? NELDER_MEAD_ITERATIONS_MAX;
  const step = options.step ?? 0.5;
  const tolerance = options.tolerance ?? 1e-10;
  const lower = options.lower ?? -Infinity;
  const upper = options.upper ?? Infinity;
  const dim = x0.length;
  const clamp = (x: number[]): number[] => x.map((v) => Math.min(upper, Math.max(lower, v)));
  const evaluate = (x: number[]): number => {
    const v = f(x);
    return Number.isNaN(v) ? Infinity : v;
  };

  // Standard coefficients: reflection 1, expansion 2, contraction 1/2, shrink 1/2.
  let simplex: number[][] = [clamp([...x0])];
  for (let i = 0; i < dim; i++) {
    const p = [...x0];
    // Step away from a bound rather than onto it, so the simplex does not start flat.
    p[i] = (p[i] as number) + ((p[i] as number) + step > upper ? -step : step);
    simplex.push(clamp(p));
  }
  let values = simplex.map(evaluate);

  let iterations = 0;
  let converged = false;
  for (; iterations < iterationsMax; iterations++) {
    const order = values.map((_, i) => i).sort((a, b) => (values[a] as number) - (values[b] as number));
    simplex = order.map((i) => simplex[i] as number[]);
    values = order.map((i) => values[i] as number);
    const best = values[0] as number;
    const worst = values[dim] as number;
    if (Number.isFinite(worst) && Math.abs(worst - best) <= tolerance * (Math.abs(best) + tolerance)) {
      converged = true;
      break;
    }
    const centroid = new Array<number>(dim).fill(0);
    for (let i = 0; i < dim; i++) for (let j = 0; j < dim; j++) centroid[j] = (centroid[j] as number) + (simplex[i]![j] as number) / dim;
    const towards = (coef: number): number[] => clamp(centroid.map((c, j) => c + coef * (c - (simplex[dim]![j] as number))));

    const reflected = towards(1);
    const fr = evaluate(reflected);
    if (fr < best) {
      const expanded = towards(2);
      const fe = evaluate(expanded);
      if (fe < fr) [simplex[dim], values[dim]] = [expanded, fe];
      else [simplex[dim], values[dim]] = [reflected, fr];
      continue;
    }
    if (fr < (values[dim - 1] as number)) {
      [simplex[dim], values[dim]] = [reflected, fr];
      continue;
    }
    // Contract outside when the reflection beat the worst point, inside otherwise.
    const outside = fr < worst;
    const contracted = towards(outside ? 0.5 : -0.5);
    const fc = evaluate(contracted);
    if (fc < (outside ? fr : worst)) {
      [simplex[dim], values[dim]] = [contracted, fc];
      continue;
    }
    const x0b = simplex[0] as number[];
    for (let i = 1; i <= dim; i++) {
      simplex[i] = clamp(simplex[i]!.map((v, j) => (x0b[j] as number) + 0.5 * (v - (x0b[j] as number))));
      values[i] = evaluate(simplex[i] as number[]);
    }
  }
  let bestIndex = 0;
  for (let i = 1; i < values.length; i++) if ((values[i] as number) < (values[bestIndex] as number)) bestIndex = i;
  return { x: simplex[bestIndex] as number[], value: values[bestIndex] as number, iterations, converged };
}

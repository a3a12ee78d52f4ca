/**
 * Paired, alternating rounds (pure functions, unit-tested in test/bench-rounds.test.ts).
 *
 * On a shared 2-core machine throughput drifts by 20-30% over tens of seconds, so a scenario measured once
 * and compared with a baseline measured at another moment gives a ratio with a large error. Instead each
 * round measures the baseline and every scenario one after the other, the order reversed every other round
 * so that a slow drift favours no scenario; a scenario's ratio for a round is its figure over the
 * baseline's figure of that same round, and the figure reported is the median of those per-round ratios.
 */

/** The median of the values (the mean of the two middle ones for an even count); null when there are none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? upper) + upper) / 2;
}

/** The order of a round: as given on even rounds (0, 2, ...), reversed on odd ones. */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...items] : [...items].reverse();
}

export function roundOrderName(round: number): "forward" | "reversed" {
  return round % 2 === 0 ? "forward" : "reversed";
}

/** A scenario's ratios to the baseline, one per round, and their median, min and max. */
export interface PairedRatio {
  /** Each round's ratio, null when the round lacks the scenario or a positive baseline figure. */
  perRound: (number | null)[];
  median: number | null;
  min: number | null;
  max: number | null;
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

/**
 * For every scenario but the baseline: its figure in each round divided by the baseline's figure in the
 * same round, and the median, min and max of those ratios. `rounds` holds one figure per scenario name per
 * round (req/s, or a latency); ratios are rounded to 3 digits after the median is taken.
 */
export function pairedRatios(
  rounds: readonly Readonly<Record<string, number | undefined>>[],
  baseline: string,
): Record<string, PairedRatio> {
  const names = new Set<string>();
  for (const figures of rounds) {
    for (const name of Object.keys(figures)) if (name !== baseline) names.add(name);
  }
  const result: Record<string, PairedRatio> = {};
  for (const name of names) {
    const perRound = rounds.map((figures) => {
      const base = figures[baseline];
      const value = figures[name];
      return base === undefined || value === undefined || !(base > 0) ? null : value / base;
    });
    const measured = perRound.filter((ratio): ratio is number => ratio !== null);
    const middle = median(measured);
    result[name] = {
      perRound: perRound.map((ratio) => (ratio === null ? null : round3(ratio))),
      median: middle === null ? null : round3(middle),
      min: measured.length === 0 ? null : round3(Math.min(...measured)),
      max: measured.length === 0 ? null : round3(Math.max(...measured)),
    };
  }
  return result;
}

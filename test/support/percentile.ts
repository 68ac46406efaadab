/**
 * The nearest-rank percentile of ascending `sorted` values: the smallest value with at least
 * `fraction` (0–1) of the values at or below it; NaN when there are none. The one definition
 * of the latency figures the benchmark and the scripts report.
 */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;
}

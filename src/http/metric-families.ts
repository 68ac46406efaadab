import type { Metric, Registry } from 'prom-client';

/**
 * Counters and histograms recorded on every request, at the cost of a map lookup and a few
 * additions: prom-client's own classes hash their labels on each call (about a microsecond
 * per observation), which a request would pay several times. These keep plain numbers per
 * series and hand them to prom-client's registry only when /metrics is scraped, through
 * the interface its registry asks of a metric (`name`, `help`, `type`, `get()`), so the text
 * is prom-client's own.
 */

type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

abstract class Family<Series> {
  protected readonly series = new Map<string, Series>();
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  protected seriesOf(values: readonly string[], create: () => Series): Series {
    const key = values.length === 1 ? values[0]! : values.join('\n');
    let found = this.series.get(key);
    if (found === undefined) this.series.set(key, (found = create()));
    return found;
  }

  protected labelsOf(values: readonly string[]): Record<string, string> {
    return Object.fromEntries(this.labelNames.map((name, index) => [name, values[index]!]));
  }

  abstract get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }>;
}

export class CounterFamily extends Family<{ labels: Record<string, string>; value: number }> {
  readonly type = 'counter';

  /** Adds one to the series of these label values (in the order of labelNames). */
  inc(...values: string[]): void {
    this.seriesOf(values, () => ({ labels: this.labelsOf(values), value: 0 })).value += 1;
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: [...this.series.values()].map(({ labels, value }) => ({ labels, value })) };
  }
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last counts those above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class HistogramFamily extends Family<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    registry: Registry,
    /** Upper bounds, ascending. */
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames, registry);
  }

  /** Records one observation in the series of these label values. */
  observe(value: number, ...values: string[]): void {
    const series = this.seriesOf(values, () => ({ labels: this.labelsOf(values), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }));
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket += 1;
    series.counts[bucket]! += 1;
    series.sum += value;
    series.count += 1;
  }

  async get() {
    const values: Value[] = [];
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, index) => {
        cumulative += counts[index]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels, value: sum });
      values.push({ metricName: `${this.name}_count`, labels, value: count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

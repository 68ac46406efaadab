/**
 * A strict parser of Prometheus' text exposition format (version 0.0.4), for tests that read
 * /metrics as a scraper would. Every sample must belong to a family declared by `# TYPE`
 * (a histogram's as `_bucket`, `_sum` and `_count`), label values are unescaped, values are
 * numbers (or ±Inf, NaN), and a histogram series' buckets are grouped by its other labels.
 * (The npm parser we tried, parse-prometheus-text-format, merges labelled histograms into one.)
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface HistogramSeries {
  labels: Record<string, string>;
  /** [upper bound, cumulative count], in order of the bound; the last is +Inf. */
  buckets: [number, number][];
  count: number;
  sum: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  /** Counters, gauges and untyped: one sample per series. */
  samples: Sample[];
  /** Histograms: one entry per series. */
  histograms: HistogramSeries[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const histogramSeries = new Map<string, HistogramSeries>();
  const familyOf = (sampleName: string): { family: MetricFamily; part: 'value' | 'bucket' | 'sum' | 'count' } => {
    const direct = families.get(sampleName);
    if (direct && direct.type !== 'histogram') return { family: direct, part: 'value' };
    for (const part of ['bucket', 'sum', 'count'] as const) {
      const family = sampleName.endsWith(`_${part}`) ? families.get(sampleName.slice(0, -part.length - 1)) : undefined;
      if (family?.type === 'histogram') return { family, part };
    }
    throw new Error(`sample ${sampleName} belongs to no declared family`);
  };

  for (const [index, line] of text.split('\n').entries()) {
    if (line === '') continue;
    const where = `line ${index + 1}: ${line}`;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!match) continue;
      const [, keyword, name, rest] = match as unknown as [string, string, string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name, ${where}`);
      const family = families.get(name) ?? { name, help: '', type: 'untyped' as MetricType, samples: [], histograms: [] };
      families.set(name, family);
      if (keyword === 'HELP') family.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      else if (['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) family.type = rest as MetricType;
      else throw new Error(`bad type, ${where}`);
      continue;
    }
    const { name, labels, value } = parseSampleLine(line, where);
    const { family, part } = familyOf(name);
    if (part === 'value') {
      family.samples.push({ labels, value });
      continue;
    }
    const { le, ...rest } = labels;
    const key = `${family.name}\n${JSON.stringify(Object.entries(rest).sort())}`;
    let series = histogramSeries.get(key);
    if (!series) {
      histogramSeries.set(key, (series = { labels: rest, buckets: [], count: NaN, sum: NaN }));
      family.histograms.push(series);
    }
    if (part === 'bucket') {
      if (le === undefined) throw new Error(`bucket without le, ${where}`);
      series.buckets.push([parseNumber(le, where), value]);
    } else series[part] = value;
  }
  for (const series of histogramSeries.values()) series.buckets.sort(([a], [b]) => a - b);
  return families;
}

function parseSampleLine(line: string, where: string): { name: string; labels: Record<string, string>; value: number } {
  const nameEnd = line.search(/[{ ]/);
  if (nameEnd <= 0) throw new Error(`no sample name, ${where}`);
  const name = line.slice(0, nameEnd);
  if (!METRIC_NAME.test(name)) throw new Error(`bad sample name, ${where}`);
  const labels: Record<string, string> = {};
  let position = nameEnd;
  if (line[position] === '{') {
    position += 1;
    while (line[position] !== '}') {
      const equals = line.indexOf('=', position);
      const labelName = line.slice(position, equals);
      if (equals < 0 || !LABEL_NAME.test(labelName) || line[equals + 1] !== '"') throw new Error(`bad label, ${where}`);
      position = equals + 2;
      let value = '';
      for (;;) {
        const character = line[position];
        if (character === undefined) throw new Error(`unterminated label value, ${where}`);
        position += 1;
        if (character === '"') break;
        if (character === '\\') {
          const escaped = line[position];
          position += 1;
          if (escaped === 'n') value += '\n';
          else if (escaped === '\\' || escaped === '"') value += escaped;
          else throw new Error(`bad escape in label value, ${where}`);
        } else value += character;
      }
      if (labelName in labels) throw new Error(`label ${labelName} twice, ${where}`);
      labels[labelName] = value;
      if (line[position] === ',') position += 1;
      else if (line[position] !== '}') throw new Error(`bad label list, ${where}`);
    }
    position += 1;
  }
  const [valueText, timestamp, extra] = line.slice(position).trim().split(/\s+/);
  if (valueText === undefined || extra !== undefined || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) throw new Error(`bad value, ${where}`);
  return { name, labels, value: parseNumber(valueText, where) };
}

/** As Prometheus reads values (Go's ParseFloat): Inf and NaN in any case. */
function parseNumber(text: string, where: string): number {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`not a number: ${text}, ${where}`);
  return value;
}

/** The families of a /metrics answer, by name. */
export class Scrape {
  readonly families: Map<string, MetricFamily>;

  constructor(readonly text: string) {
    this.families = parsePrometheusText(text);
  }

  family(name: string): MetricFamily {
    const family = this.families.get(name);
    if (!family) throw new Error(`no metric family ${name} in:\n${[...this.families.keys()].join('\n')}`);
    return family;
  }

  /** The samples of a counter or gauge whose labels include `labels`. */
  series(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.family(name).samples.filter((sample) => includes(sample.labels, labels));
  }

  /** The value of the one series with exactly these labels (0 when there is none yet). */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.family(name).samples.filter((sample) => sameLabels(sample.labels, labels));
    if (found.length > 1) throw new Error(`${found.length} series of ${name} with labels ${JSON.stringify(labels)}`);
    return found[0]?.value ?? 0;
  }

  /** The histogram series whose labels include `labels`. */
  histograms(name: string, labels: Record<string, string> = {}): HistogramSeries[] {
    const family = this.family(name);
    if (family.type !== 'histogram') throw new Error(`${name} is a ${family.type}`);
    return family.histograms.filter((series) => includes(series.labels, labels));
  }

  /** The histogram series with exactly these labels (zeros when there is none yet). */
  histogram(name: string, labels: Record<string, string> = {}): HistogramSeries {
    return this.histograms(name).find((series) => sameLabels(series.labels, labels)) ?? { labels, buckets: [], count: 0, sum: 0 };
  }
}

function includes(actual: Record<string, string>, expected: Record<string, string>): boolean {
  return Object.entries(expected).every(([key, value]) => actual[key] === value);
}

function sameLabels(actual: Record<string, string>, expected: Record<string, string>): boolean {
  return Object.keys(actual).length === Object.keys(expected).length && includes(actual, expected);
}

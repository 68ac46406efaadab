/**
 * A minimal SQL builder for statements assembled on every request (compiled reads):
 * tagged templates whose values become `$n` parameters, nested fragments, raw text and
 * joins. Drizzle's own builder spends more time per statement than running it costs.
 */
export class Statement {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}

  /** The text with `$1…$n` placeholders and the parameters in order. */
  toQuery(): { text: string; params: unknown[] } {
    const params: unknown[] = [];
    const text = this.render(params);
    return { text, params };
  }

  private render(params: unknown[]): string {
    let text = this.strings[0]!;
    for (let index = 0; index < this.values.length; index += 1) {
      const value = this.values[index];
      if (value instanceof Statement) text += value.render(params);
      else if (value instanceof Raw) text += value.text;
      else {
        params.push(value);
        text += `$${params.length}`;
      }
      text += this.strings[index + 1]!;
    }
    return text;
  }
}

class Raw {
  constructor(readonly text: string) {}
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Statement {
  return new Statement(strings, values);
}

/** Text put into the statement as it is: identifiers and keywords, never values. */
sql.raw = (text: string): Statement => new Statement(['', ''], [new Raw(text)]);

sql.join = (parts: readonly Statement[], separator: Statement): Statement => {
  const values: unknown[] = [];
  parts.forEach((part, index) => {
    if (index > 0) values.push(separator);
    values.push(part);
  });
  return new Statement(['', ...values.map(() => '')], values);
};

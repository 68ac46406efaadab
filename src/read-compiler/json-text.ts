import { sql, type Statement as SQL } from '../db/statement.js';
import type { ResponseKey } from './plan.js';

/**
 * The JSON text of compiled reads (sql.ts), written in SQL: constants, and pieces joined by
 * concatenation or, for the largest, by one aggregate over rows (AnswerRows).
 */

/**
 * A value's key in the answer. A field's own name is written into the statement (names come
 * from the schema: a fixed set); an alias, which the client picks, is a parameter (its JSON
 * string, written once here, not on every row), so that queries differing only in their
 * aliases share one statement text.
 */
export function responseKey(key: ResponseKey): Piece {
  return key.alias !== null ? sql`${JSON.stringify(key.alias)}::text` : JSON.stringify(checkedName(key.name));
}

/** A stored enum value (of our own declarations: lower-case words) as a SQL string literal. */
export function literalText(text: string): SQL {
  if (!/^[a-z_]+$/.test(text)) throw new Error(`not an enum value: ${text}`);
  return sql.raw(`'${text}'`);
}

/** A GraphQL name: it matches [_A-Za-z][_0-9A-Za-z]*, so it needs no escaping in SQL or JSON. */
export function checkedName(text: string): string {
  if (!/^[_A-Za-z][_0-9A-Za-z]*$/.test(text)) throw new Error(`not a GraphQL name: ${text}`);
  return text;
}

/** A GraphQL name as a JSON string (a type's name, an enum value). */
export const nameJson = (text: string): string => JSON.stringify(checkedName(text));

/** JSON text written into the statement as a string literal. */
export function constant(json: string): SQL {
  return sql.raw(`'${json.replaceAll("'", "''")}'`);
}

/** A piece of JSON text: a constant, or an expression giving text that is never null. */
export type Piece = string | SQL;

/**
 * The pieces concatenated (adjacent constants written as one), in a balanced tree of `||`:
 * each `||` copies both its sides, so a chain would copy what it has so far at every step (a
 * memory's content once for each piece after it); halves copy each byte once per level.
 */
export function concat(pieces: readonly Piece[]): SQL {
  const merged: SQL[] = [];
  let text = '';
  for (const piece of pieces) {
    if (typeof piece === 'string') text += piece;
    else {
      if (text !== '') merged.push(constant(text));
      merged.push(piece);
      text = '';
    }
  }
  if (text !== '') merged.push(constant(text));
  const tree = (from: number, to: number): SQL => {
    if (to - from === 1) return merged[from]!;
    const middle = (from + to) >> 1;
    return sql`(${tree(from, middle)} || ${tree(middle, to)})`;
  };
  return merged.length === 0 ? constant('') : tree(0, merged.length);
}

/** The pieces of a JSON object of these keys and values, in order: `{`, each key and its value, `}`. */
function objectPieces<Value>(entries: readonly (readonly [ResponseKey, Value])[]): (Piece | Value)[] {
  const pieces: (Piece | Value)[] = ['{'];
  entries.forEach(([key, value], index) => pieces.push(index === 0 ? '' : ',', responseKey(key), ':', value));
  pieces.push('}');
  return pieces;
}

/** A JSON object of these keys and values, in order. */
export function jsonObject(entries: readonly (readonly [ResponseKey, Piece])[]): SQL {
  return concat(objectPieces(entries));
}

/** A value written into AnswerRows as rows of its own (a list's items). */
export type RowsWriter = (answer: AnswerRows) => void;

/** A JSON array of an aggregate's elements (`string_agg(element, ',' order by …)`), `[]` when it has none. */
export const jsonArray = (aggregate: SQL): SQL => sql`coalesce('[' || ${aggregate} || ']', '[]')`;

/**
 * An answer that holds a list at the root (the dashboard's memoryStores), written as rows of
 * text that one aggregate joins: its pieces in order, each item of the list a row. A list's
 * JSON built by concatenation is copied whole at each `||` around it, and by the subquery
 * that returns it: at the root, where it is largest (hundreds of KiB), each copy is a fresh
 * allocation of its own, and those copies cost the statement more than all its rows and
 * values do. Joined here, it is built once, in the aggregate's one buffer.
 */
export class AnswerRows {
  private readonly rows: SQL[] = [];
  private pending: Piece[] = [];

  /** Pieces of text that follow. */
  text(...pieces: Piece[]): void {
    this.pending.push(...pieces);
  }

  /** A JSON object of these keys and values, in order, as jsonObject writes it; a value may write rows of its own. */
  object(entries: readonly (readonly [ResponseKey, Piece | RowsWriter])[]): void {
    for (const piece of objectPieces(entries)) {
      if (typeof piece === 'function') piece(this);
      else this.text(piece);
    }
  }

  /** A list's items: `item` for each row of `source` (`from … where …`), in the order of its `position` (from 1), separated by commas. */
  items(item: SQL, position: SQL, source: SQL): void {
    this.flush();
    this.rows.push(sql`select ${sql.raw(String(this.rows.length))}, ${position}, ${item}, case when ${position} = 1 then '' else ',' end ${source}`);
  }

  /** The text of every row, joined in order: a subquery with one column, `data`, under `condition`. */
  joined(condition: SQL): SQL {
    this.flush();
    return sql`(select string_agg(answer_rows.piece, answer_rows.separator order by answer_rows.part, answer_rows.position) as data
      from (${sql.join(this.rows, sql` union all `)}) answer_rows (part, position, piece, separator) where ${condition})`;
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    this.rows.push(sql`select ${sql.raw(String(this.rows.length))}, 0::bigint, ${concat(this.pending)}, ''::text`);
    this.pending = [];
  }
}

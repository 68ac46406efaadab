import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGE_MARK_UNSETTLED } from '../src/domain/events.js';
import { askAgain, settledMark } from './support/ask-again.js';
import { invariantViolations } from './support/invariants.js';
import { openDatabaseAtLevel, type DatabaseAtLevel } from './support/migration-levels.js';

/**
 * The functions compiled reads call (drizzle/0009_read_functions.sql) answer what the
 * subqueries they replace answered: checked on a database upgraded from the level before
 * them, against those subqueries' own text, and for metadata against what the resolvers
 * write (JSON.stringify of the object parsed from jsonb's text).
 */

const at = '2026-11-30T12:00:00.000Z';

/** The change mark as statements wrote it before 0009, inline. */
const INLINE_MARK = `coalesce((select case when e.xid < pg_snapshot_xmin(pg_current_snapshot()) then e.xid::text || '.' || e.id::text
        when e.xid < coalesce(
      (select min(running) from pg_snapshot_xip(pg_current_snapshot()) running
        where not exists (select 1 from pg_stat_activity other
          where other.backend_xid is not null and other.datname is distinct from current_database()
            and other.backend_xid::text = (running::text::numeric % 4294967296)::text)),
      pg_snapshot_xmax(pg_current_snapshot())) then e.xid::text || '.' || e.id::text else 'unsettled' end
      from "memory_events" e where e.workspace_id = w.id order by e.xid desc, e.id desc limit 1), 'empty')`;

/** Metadata as statements wrote it before 0009, inline. */
const INLINE_METADATA = `(select coalesce('{' || string_agg(to_json(e.key)::text || ':' || e.value::text, ',' order by
      (case when e.key ~ '^(0|[1-9][0-9]{0,9})$' then nullif(least(e.key::bigint, 4294967295), 4294967295) end) nulls last,
      octet_length(e.key), e.key collate "C") || '}', '{}') from jsonb_each($1::jsonb) e)`;

describe('upgrading from 0008_announce_after_commit (before the read functions)', () => {
  let database: DatabaseAtLevel;
  const workspaces = ['upgrade', 'quiet', 'nobody'];
  let before: { id: string; mark: string }[];

  beforeAll(async () => {
    database = await openDatabaseAtLevel('0008_announce_after_commit');
    const store = 'memstore_0000000000000000000a';
    await database.exec(`
      insert into workspaces values ('upgrade', '${at}'), ('quiet', '${at}');
      insert into memory_stores values ('upgrade', '${store}', 'notes', '', 'active', 0, 0, '{"b":"2","10":"x","a":"1","2":"y"}', false, null, null, '${at}', '${at}', null);
      insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values ('upgrade', 'store_created', '${store}', '${at}');
    `);
    await database.exec(`insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values ('upgrade', 'store_updated', '${store}', '${at}')`);
    // A mark is `unsettled` for an instant under load, while a transaction of another
    // database ends (src/domain/events.ts): asked again until it has settled.
    before = await askAgain(
      () => database.query<{ id: string; mark: string }>(`select w.id, ${INLINE_MARK} as mark from unnest($1::text[]) w(id) order by w.id`, [workspaces]),
      (rows) => rows.some((row) => row.mark === CHANGE_MARK_UNSETTLED),
    );
    await database.migrateToLatest();
  });
  afterAll(async () => {
    await database?.close();
  });

  it('keeps every row and the invariants, and each workspace keeps its change mark', async () => {
    expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
    expect(before.map((row) => row.mark)).toEqual(['empty', 'empty', expect.stringMatching(/^\d+\.\d+$/)]);
    const after = await askAgain(
      () => database.query<{ id: string; mark: string }>(`select w.id, memstore_change_mark(w.id) as mark from unnest($1::text[]) w(id) order by w.id`, [workspaces]),
      (rows) => rows.some((row) => row.mark === CHANGE_MARK_UNSETTLED),
    );
    expect(after).toEqual(before);
    for (const { id, mark } of before) expect(await settledMark(database.db, id)).toBe(mark);
  });

  it('writes a store\'s metadata as before: array-index keys first, ascending, then jsonb\'s order', async () => {
    const [row] = await database.query<{ text: string }>(`select memstore_metadata_json(metadata) as text from memory_stores`);
    expect(row!.text).toBe('{"2":"y","10":"x","a":"1","b":"2"}');
  });

  // Keys that are array indexes in JavaScript (0 … 2^32 − 2) and keys that only look like
  // them, with the characters JSON escapes, of several UTF-8 lengths.
  const character = fc.constantFrom('a', 'Z', '0', '1', '9', 'é', '😀', '"', '\\', '/', '\n', '\t', '\u001f', '\u007f', '\u2028', ' ', '-', '.');
  const text = fc.string({ unit: character, maxLength: 6 });
  const key = fc.oneof(fc.constantFrom('0', '00', '01', '1', '9', '10', '4294967294', '4294967295', '4294967296', '-1', '1.5', '1e3', ''), fc.nat().map(String), text);
  const metadata = fc.dictionary(key, text, { maxKeys: 8 });

  it('writes any metadata byte for byte as the resolvers do, and as the subquery it replaces did', async () => {
    await fc.assert(
      fc.asyncProperty(metadata, async (object) => {
        const stored = JSON.stringify(object);
        const [row] = await database.query<{ written: string; inline: string; stored: string }>(
          `select memstore_metadata_json($1::jsonb) as written, ${INLINE_METADATA} as inline, $1::jsonb::text as stored`,
          [stored],
        );
        const resolvers = JSON.stringify(JSON.parse(row!.stored));
        expect(row!.written).toBe(resolvers);
        expect(row!.inline).toBe(resolvers);
      }),
      { numRuns: 300 },
    );
  });
});

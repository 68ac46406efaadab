-- Functions that compiled reads call on every answer, instead of writing the same subqueries
-- into each statement. A subquery in a statement is set up by the executor on every run,
-- whether or not it is evaluated: the horizon's join over pg_stat_activity in the change
-- mark, and the metadata's aggregate over jsonb_each, cost a memory-by-id read about a third
-- of its database time. A PL/pgSQL function keeps its plans for the session, and runs its
-- queries only when they are needed. Stable functions read with the calling statement's
-- snapshot, so the answer, its change mark and its horizon still come from one snapshot.
-- No table changes: a server of the previous version, left running beside an upgraded one,
-- goes on with its own statements.

-- The horizon of the statement's snapshot (src/domain/events.ts, "horizon"): the oldest
-- transaction still running in it, or the snapshot's xmax when none runs. Transaction ids
-- belong to the whole PostgreSQL server, so pg_snapshot_xmin would also wait for writing
-- transactions of other databases, which can never write this database's events. A running
-- transaction is left out only when pg_stat_activity shows its id on a session of another
-- database: a session's database never changes and ids are never reused, so that is a fact,
-- whenever it was read. Any other (a session of this database, one that has just ended, one
-- whose details this role may not see) holds the horizon. Ids compare on their low 32 bits
-- (pg_stat_activity shows xid, the snapshot xid8): ids running at once are less than 2^31
-- apart.
CREATE FUNCTION "memstore_event_horizon"() RETURNS xid8 LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  RETURN coalesce(
    (SELECT min(running) FROM pg_snapshot_xip(pg_current_snapshot()) running
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity other
        WHERE other.backend_xid IS NOT NULL AND other.datname IS DISTINCT FROM current_database()
          AND other.backend_xid::text = (running::text::numeric % 4294967296)::text)),
    pg_snapshot_xmax(pg_current_snapshot()));
END $$;--> statement-breakpoint

-- A workspace's change mark as of the statement's snapshot (src/domain/events.ts): its newest
-- event's position as '<xid>.<id>', 'empty' when it has none, or 'unsettled' while a
-- transaction below that event may still commit one behind it. The snapshot's xmin is tried
-- first: it costs nothing and mostly settles the mark already.
CREATE FUNCTION "memstore_change_mark"(p_workspace text) RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  newest record;
BEGIN
  SELECT e.xid, e.id INTO newest FROM memory_events e
    WHERE e.workspace_id = p_workspace ORDER BY e.xid DESC, e.id DESC LIMIT 1;
  IF NOT FOUND THEN
    RETURN 'empty';
  END IF;
  IF newest.xid < pg_snapshot_xmin(pg_current_snapshot()) THEN
    RETURN newest.xid::text || '.' || newest.id::text;
  END IF;
  IF newest.xid < memstore_event_horizon() THEN
    RETURN newest.xid::text || '.' || newest.id::text;
  END IF;
  RETURN 'unsettled';
END $$;--> statement-breakpoint

-- Metadata as compact JSON text, in the order of a JavaScript object parsed from jsonb's
-- text (what the resolvers answer): array-index keys (0 … 2^32 − 2) first, ascending as
-- numbers, then the others in jsonb's order (by UTF-8 length, then bytes). Values are written
-- as jsonb writes them. Empty metadata, the usual case, runs no query.
CREATE FUNCTION "memstore_metadata_json"(p_metadata jsonb) RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  IF p_metadata = '{}'::jsonb THEN
    RETURN '{}';
  END IF;
  RETURN (SELECT coalesce('{' || string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY
      (CASE WHEN e.key ~ '^(0|[1-9][0-9]{0,9})$' THEN nullif(least(e.key::bigint, 4294967295), 4294967295) END) NULLS LAST,
      octet_length(e.key), e.key COLLATE "C") || '}', '{}') FROM jsonb_each(p_metadata) e);
END $$;

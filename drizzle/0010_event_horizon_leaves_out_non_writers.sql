-- The horizon (src/domain/events.ts, "horizon") also leaves out the running transactions of
-- two kinds of session of this database that never write memstore's events:
-- - memstore's announcement sessions (application_name 'memstore announcements',
--   src/db/announcements.ts), which only ever run `select pg_notify(...)`. Such a
--   transaction takes its id before it queues for PostgreSQL's one notification lock, which
--   every database of the server shares, and may wait there for other databases' notifying
--   commits. Until now it held the horizon while it waited: the events of writes that took
--   their ids after it were not delivered, and a workspace's change mark was 'unsettled'
--   (a polled answer carried no tag), however long the wait.
-- - autovacuum workers, whose ANALYZE takes an id to write the planner's statistics.
-- As before, a transaction is left out only on what pg_stat_activity shows next to its id;
-- one that has just ended still holds the horizon, and so does an autovacuum worker's when
-- the role may not see backend_type (only a superuser or pg_read_all_stats may).
-- No table changes: a server of the previous version, left running beside an upgraded one,
-- calls the same function and gets the same or a later horizon, which is still right: the
-- transactions it now passes over never write events, in either version.
CREATE OR REPLACE FUNCTION "memstore_event_horizon"() RETURNS xid8 LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  RETURN coalesce(
    (SELECT min(running) FROM pg_snapshot_xip(pg_current_snapshot()) running
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity other
        WHERE other.backend_xid IS NOT NULL
          AND (other.datname IS DISTINCT FROM current_database()
            OR other.application_name = 'memstore announcements'
            OR other.backend_type = 'autovacuum worker')
          AND other.backend_xid::text = (running::text::numeric % 4294967296)::text)),
    pg_snapshot_xmax(pg_current_snapshot()));
END $$;

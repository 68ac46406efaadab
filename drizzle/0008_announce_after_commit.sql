-- Commits of writes with events are announced by the server after they commit, outside the
-- writing transaction (src/db/announcements.ts). A NOTIFY from this trigger made every such
-- commit take PostgreSQL's one notification-queue lock and hold it through its WAL flush, so
-- that writers committed one at a time. The readers still read the table itself; a server of
-- the previous version, left running beside an upgraded one, finds new events by polling.
DROP TRIGGER "memory_events_notify" ON "memory_events";--> statement-breakpoint
DROP FUNCTION "memory_events_notify"();

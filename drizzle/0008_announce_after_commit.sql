-- Writes are announced to the live-update readers by the server after they end, outside the
-- writing transaction (src/db/announcements.ts). A NOTIFY from this trigger made every such
-- commit take PostgreSQL's one notification-queue lock and hold it through its WAL flush, so
-- that writers committed one at a time. The readers still read the table itself; a server of
-- the previous version, left running beside an upgraded one, finds new events by polling.
-- Dropping the trigger locks memory_events briefly: the upgrade waits for the transactions
-- that use it (each within the request time limit) and holds new ones until it commits.
DROP TRIGGER "memory_events_notify" ON "memory_events";--> statement-breakpoint
DROP FUNCTION "memory_events_notify"();

-- How far the retention sweep has deleted each workspace's events (src/db/schema.ts
-- memoryEventSweeps): a replay that reads a page after a position the sweep has passed
-- ends with CURSOR_EXPIRED instead of passing over the deleted events.
CREATE TABLE "memory_event_sweeps" (
	"workspace_id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"xid" "xid8" NOT NULL,
	"id" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "memory_event_sweeps" ADD CONSTRAINT "memory_event_sweeps_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- Sweeps before this migration left no mark, and which events they deleted is not known:
-- each workspace's mark starts just before its oldest remaining event (the sweep keeps
-- every workspace's newest, so a workspace that had events has one). A cursor of that event
-- or a later one replays as before; an earlier cursor, whose events may be gone, is expired.
INSERT INTO "memory_event_sweeps" ("workspace_id", "xid", "id")
SELECT DISTINCT ON ("workspace_id") "workspace_id", "xid", "id" - 1
FROM "memory_events"
ORDER BY "workspace_id", "xid", "id";

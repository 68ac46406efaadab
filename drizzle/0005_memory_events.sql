CREATE TYPE "public"."memory_event_kind" AS ENUM('memory_created', 'memory_updated', 'memory_deleted', 'version_redacted', 'store_created', 'store_updated', 'store_archived', 'store_deleted');--> statement-breakpoint
CREATE TABLE "memory_events" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "memory_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"xid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"kind" "memory_event_kind" NOT NULL,
	"memory_store_id" text COLLATE "C" NOT NULL,
	"memory_id" text COLLATE "C",
	"memory_version_id" text COLLATE "C",
	"path" text COLLATE "C",
	"previous_path" text COLLATE "C",
	"occurred_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "memory_events_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "memory_events" ADD CONSTRAINT "memory_events_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "memory_events_position_idx" ON "memory_events" USING btree ("xid","id");--> statement-breakpoint
CREATE INDEX "memory_events_occurred_idx" ON "memory_events" USING btree ("occurred_at");--> statement-breakpoint
-- Wakes the readers of every server instance (LISTEN memstore_events) when a transaction that
-- wrote events commits: PostgreSQL delivers a notification at commit only, and one per
-- transaction (identical payloads are merged). The readers then read the table itself.
CREATE FUNCTION "memory_events_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('memstore_events', '');
  RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "memory_events_notify" AFTER INSERT ON "memory_events" FOR EACH STATEMENT EXECUTE FUNCTION "memory_events_notify"();

-- Sessions go with their workspace (ON DELETE CASCADE, as every other tenant table). Sessions
-- left behind by a deleted workspace would become readable to a new workspace of that id:
-- they are removed first.
DELETE FROM "sessions" WHERE NOT EXISTS (SELECT 1 FROM "workspaces" WHERE "workspaces"."id" = "sessions"."workspace_id");--> statement-breakpoint
-- A system-managed default store is private to its identity: explicit mounts of it on a pair of
-- another identity can no longer be made, and those made before are removed. (Its own pair's
-- default slot, and mounts on other templates of the same identity, stay.)
DELETE FROM "memory_store_mounts" USING "memory_stores"
  WHERE "memory_stores"."workspace_id" = "memory_store_mounts"."workspace_id"
    AND "memory_stores"."id" = "memory_store_mounts"."memory_store_id"
    AND "memory_stores"."system_managed"
    AND "memory_stores"."identity_id" IS DISTINCT FROM "memory_store_mounts"."identity_id";--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;

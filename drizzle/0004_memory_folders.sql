CREATE TABLE "memory_folders" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"memory_store_id" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C" NOT NULL,
	"parent" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"memory_count" integer NOT NULL,
	"total_size" bigint NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "memory_folders_workspace_id_memory_store_id_path_pk" PRIMARY KEY("workspace_id","memory_store_id","path"),
	CONSTRAINT "memory_folders_counters_positive" CHECK ("memory_folders"."memory_count" > 0 and "memory_folders"."total_size" >= 0)
);
--> statement-breakpoint
ALTER TABLE "memory_folders" ADD CONSTRAINT "memory_folders_store_fk" FOREIGN KEY ("workspace_id","memory_store_id") REFERENCES "public"."memory_stores"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "memory_folders_parent_idx" ON "memory_folders" USING btree ("workspace_id","memory_store_id","parent","name");--> statement-breakpoint
-- Hand-written below: what drizzle cannot express.
-- The folder a memory lies in directly: its path up to and including the last "/" ("" at the
-- root). Generated, so every write path fills it; not declared in src/db/schema.ts, so drizzle
-- never selects it.
ALTER TABLE "memories" ADD COLUMN "folder" text COLLATE "C" GENERATED ALWAYS AS (coalesce(substring("path" from '^(.*/)'), '')) STORED;--> statement-breakpoint
-- One folder level's memories, by name (within a folder, path order is name order).
CREATE INDEX "memories_store_folder_idx" ON "memories" USING btree ("workspace_id","memory_store_id","folder","path");--> statement-breakpoint
-- Applies one memory's arrival ('add'), departure ('remove') or change of size or time in
-- place ('change') to every folder above its path. A departure that took the folder's newest
-- memory finds the newest one left below it (an index range scan of that folder).
CREATE FUNCTION "memstore_folder_rollup"(p_workspace text, p_store text, p_path text, p_mode text, p_bytes bigint, p_updated_at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_folder text COLLATE "C";
  v_parent text COLLATE "C" := '';
  v_cut integer := 0;
  v_slash integer;
BEGIN
  LOOP
    v_slash := strpos(substr(p_path, v_cut + 1), '/');
    EXIT WHEN v_slash = 0;
    v_cut := v_cut + v_slash;
    v_folder := left(p_path, v_cut);
    IF p_mode = 'add' THEN
      -- The folder usually exists: a plain update, and an insert only for a new folder (which
      -- still merges, should another writer have added it meanwhile).
      UPDATE memory_folders f SET memory_count = f.memory_count + 1, total_size = f.total_size + p_bytes, updated_at = greatest(f.updated_at, p_updated_at)
        WHERE f.workspace_id = p_workspace AND f.memory_store_id = p_store AND f.path = v_folder;
      IF NOT FOUND THEN
        INSERT INTO memory_folders AS f (workspace_id, memory_store_id, path, parent, name, memory_count, total_size, updated_at)
          VALUES (p_workspace, p_store, v_folder, v_parent, substr(v_folder, length(v_parent) + 1, length(v_folder) - length(v_parent) - 1), 1, p_bytes, p_updated_at)
          ON CONFLICT (workspace_id, memory_store_id, path) DO UPDATE
            SET memory_count = f.memory_count + 1, total_size = f.total_size + excluded.total_size, updated_at = greatest(f.updated_at, excluded.updated_at);
      END IF;
    ELSIF p_mode = 'change' THEN
      UPDATE memory_folders f SET total_size = f.total_size + p_bytes, updated_at = greatest(f.updated_at, p_updated_at)
        WHERE f.workspace_id = p_workspace AND f.memory_store_id = p_store AND f.path = v_folder;
    ELSE
      DELETE FROM memory_folders f WHERE f.workspace_id = p_workspace AND f.memory_store_id = p_store AND f.path = v_folder AND f.memory_count = 1;
      IF NOT FOUND THEN
        UPDATE memory_folders f
          SET memory_count = f.memory_count - 1,
              total_size = f.total_size + p_bytes,
              updated_at = CASE WHEN p_updated_at < f.updated_at THEN f.updated_at ELSE coalesce((
                SELECT m.updated_at FROM memories m
                  WHERE m.workspace_id = p_workspace AND m.memory_store_id = p_store AND m.path >= v_folder AND m.path < left(v_folder, -1) || '0'
                  ORDER BY m.updated_at DESC LIMIT 1), f.updated_at) END
          WHERE f.workspace_id = p_workspace AND f.memory_store_id = p_store AND f.path = v_folder;
      END IF;
    END IF;
    v_parent := v_folder;
  END LOOP;
END
$$;--> statement-breakpoint
CREATE FUNCTION "memstore_memories_folder_trigger"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM memstore_folder_rollup(NEW.workspace_id, NEW.memory_store_id, NEW.path, 'add', NEW.content_size_bytes::bigint, NEW.updated_at);
  ELSIF TG_OP = 'DELETE' THEN
    -- A store (or workspace) being deleted takes its folders with it: nothing to count.
    IF EXISTS (SELECT 1 FROM memory_stores s WHERE s.workspace_id = OLD.workspace_id AND s.id = OLD.memory_store_id) THEN
      PERFORM memstore_folder_rollup(OLD.workspace_id, OLD.memory_store_id, OLD.path, 'remove', -OLD.content_size_bytes::bigint, OLD.updated_at);
    END IF;
  ELSIF NEW.path = OLD.path THEN
    IF NEW.content_size_bytes <> OLD.content_size_bytes OR NEW.updated_at <> OLD.updated_at THEN
      PERFORM memstore_folder_rollup(NEW.workspace_id, NEW.memory_store_id, NEW.path, 'change', (NEW.content_size_bytes - OLD.content_size_bytes)::bigint, NEW.updated_at);
    END IF;
  ELSE
    PERFORM memstore_folder_rollup(OLD.workspace_id, OLD.memory_store_id, OLD.path, 'remove', -OLD.content_size_bytes::bigint, OLD.updated_at);
    PERFORM memstore_folder_rollup(NEW.workspace_id, NEW.memory_store_id, NEW.path, 'add', NEW.content_size_bytes::bigint, NEW.updated_at);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "memories_folder_rollup" AFTER INSERT OR DELETE OR UPDATE OF "path", "content_size_bytes", "updated_at" ON "memories"
  FOR EACH ROW EXECUTE FUNCTION "memstore_memories_folder_trigger"();--> statement-breakpoint
-- The folders of the memories already stored.
INSERT INTO "memory_folders" ("workspace_id", "memory_store_id", "path", "parent", "name", "memory_count", "total_size", "updated_at")
SELECT m.workspace_id, m.memory_store_id, f.folder,
    coalesce(substring(f.folder from '^(.*/)[^/]+/$'), ''), substring(f.folder from '([^/]+)/$'),
    count(*)::int, sum(m.content_size_bytes)::bigint, max(m.updated_at)
  FROM "memories" m
  CROSS JOIN LATERAL (SELECT left(m.path, cut) COLLATE "C" AS folder FROM generate_series(1, length(m.path)) AS cut WHERE substr(m.path, cut, 1) = '/') f
  GROUP BY m.workspace_id, m.memory_store_id, f.folder;

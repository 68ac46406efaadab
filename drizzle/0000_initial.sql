CREATE TYPE "public"."api_key_kind" AS ENUM('admin', 'identity');--> statement-breakpoint
CREATE TYPE "public"."environment_type" AS ENUM('managed', 'self_hosted');--> statement-breakpoint
CREATE TYPE "public"."memory_operation" AS ENUM('created', 'updated', 'deleted');--> statement-breakpoint
CREATE TYPE "public"."memory_store_status" AS ENUM('active', 'archived');--> statement-breakpoint
CREATE TYPE "public"."mount_access" AS ENUM('read_write', 'read_only');--> statement-breakpoint
CREATE TABLE "api_keys" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"name" text NOT NULL,
	"kind" "api_key_kind" NOT NULL,
	"identity_id" text,
	"token_sha256" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"revoked_at" timestamp (3) with time zone,
	CONSTRAINT "api_keys_workspace_id_id_pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "api_keys_identity_matches_kind" CHECK (("api_keys"."kind" = 'identity') = ("api_keys"."identity_id" is not null))
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"operation" text NOT NULL,
	"key" text NOT NULL,
	"request_sha256" text NOT NULL,
	"result_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_workspace_id_operation_key_pk" PRIMARY KEY("workspace_id","operation","key")
);
--> statement-breakpoint
CREATE TABLE "memories" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"memory_store_id" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C" NOT NULL,
	"content" text NOT NULL,
	"content_size_bytes" integer NOT NULL,
	"content_sha256" text NOT NULL,
	"metadata" jsonb NOT NULL,
	"version_sequence" integer NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "memories_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "memory_store_mounts" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"identity_id" text NOT NULL,
	"template_id" text NOT NULL,
	"memory_store_id" text COLLATE "C" NOT NULL,
	"access" "mount_access" NOT NULL,
	"system_managed" boolean NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "memory_store_mounts_workspace_id_identity_id_template_id_memory_store_id_pk" PRIMARY KEY("workspace_id","identity_id","template_id","memory_store_id")
);
--> statement-breakpoint
CREATE TABLE "memory_stores" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"name" text NOT NULL,
	"description" text NOT NULL,
	"status" "memory_store_status" NOT NULL,
	"entry_count" integer DEFAULT 0 NOT NULL,
	"total_size" bigint DEFAULT 0 NOT NULL,
	"metadata" jsonb NOT NULL,
	"system_managed" boolean NOT NULL,
	"identity_id" text,
	"template_id" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"archived_at" timestamp (3) with time zone,
	CONSTRAINT "memory_stores_workspace_id_id_pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "memory_stores_counters_non_negative" CHECK ("memory_stores"."entry_count" >= 0 and "memory_stores"."total_size" >= 0),
	CONSTRAINT "memory_stores_archived_at_matches_status" CHECK (("memory_stores"."status" = 'archived') = ("memory_stores"."archived_at" is not null))
);
--> statement-breakpoint
CREATE TABLE "memory_versions" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"memory_store_id" text COLLATE "C" NOT NULL,
	"memory_id" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C" NOT NULL,
	"content" text,
	"content_size_bytes" integer NOT NULL,
	"content_sha256" text NOT NULL,
	"operation" "memory_operation" NOT NULL,
	"sequence" integer NOT NULL,
	"created_by_api_key_id" text,
	"created_by_session_id" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"redacted_at" timestamp (3) with time zone,
	"redacted_by_api_key_id" text,
	"redacted_by_session_id" text,
	CONSTRAINT "memory_versions_workspace_id_id_pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "memory_versions_one_creator" CHECK (num_nonnulls("memory_versions"."created_by_api_key_id", "memory_versions"."created_by_session_id") = 1),
	CONSTRAINT "memory_versions_redaction_clears_content" CHECK ("memory_versions"."redacted_at" is null or "memory_versions"."content" is null)
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"identity_id" text NOT NULL,
	"template_id" text NOT NULL,
	"environment" "environment_type" NOT NULL,
	"default_memory_store_id" text COLLATE "C" NOT NULL,
	"memory_injected" boolean NOT NULL,
	"injected_mounts" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sessions_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "workspaces" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memories" ADD CONSTRAINT "memories_store_fk" FOREIGN KEY ("workspace_id","memory_store_id") REFERENCES "public"."memory_stores"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memory_store_mounts" ADD CONSTRAINT "memory_store_mounts_store_fk" FOREIGN KEY ("workspace_id","memory_store_id") REFERENCES "public"."memory_stores"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memory_stores" ADD CONSTRAINT "memory_stores_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memory_versions" ADD CONSTRAINT "memory_versions_store_fk" FOREIGN KEY ("workspace_id","memory_store_id") REFERENCES "public"."memory_stores"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_token_sha256_key" ON "api_keys" USING btree ("token_sha256");--> statement-breakpoint
CREATE UNIQUE INDEX "memories_store_path_key" ON "memories" USING btree ("workspace_id","memory_store_id","path");--> statement-breakpoint
CREATE INDEX "memories_store_updated_idx" ON "memories" USING btree ("workspace_id","memory_store_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "memories_store_created_idx" ON "memories" USING btree ("workspace_id","memory_store_id","created_at","id");--> statement-breakpoint
CREATE INDEX "memory_store_mounts_store_idx" ON "memory_store_mounts" USING btree ("workspace_id","memory_store_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "memory_store_mounts_default_slot_key" ON "memory_store_mounts" USING btree ("workspace_id","identity_id","template_id") WHERE "memory_store_mounts"."system_managed";--> statement-breakpoint
CREATE INDEX "memory_stores_created_idx" ON "memory_stores" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "memory_stores_default_per_pair_key" ON "memory_stores" USING btree ("workspace_id","identity_id","template_id") WHERE "memory_stores"."system_managed" and "memory_stores"."status" = 'active';--> statement-breakpoint
CREATE INDEX "memory_versions_store_idx" ON "memory_versions" USING btree ("workspace_id","memory_store_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "memory_versions_memory_sequence_key" ON "memory_versions" USING btree ("workspace_id","memory_id","sequence");--> statement-breakpoint
CREATE INDEX "memory_versions_api_key_idx" ON "memory_versions" USING btree ("workspace_id","created_by_api_key_id","created_at","id") WHERE "memory_versions"."created_by_api_key_id" is not null;--> statement-breakpoint
CREATE INDEX "memory_versions_session_idx" ON "memory_versions" USING btree ("workspace_id","created_by_session_id","created_at","id") WHERE "memory_versions"."created_by_session_id" is not null;--> statement-breakpoint
CREATE INDEX "sessions_pair_idx" ON "sessions" USING btree ("workspace_id","identity_id","template_id","created_at");
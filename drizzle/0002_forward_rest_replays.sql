CREATE TABLE "request_replays" (
	"workspace_id" text COLLATE "C" NOT NULL,
	"key" text NOT NULL,
	"request_sha256" text NOT NULL,
	"response_body" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "request_replays_workspace_id_key_pk" PRIMARY KEY("workspace_id","key")
);
--> statement-breakpoint
ALTER TABLE "request_replays" ADD CONSTRAINT "request_replays_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "request_replays_created_idx" ON "request_replays" USING btree ("workspace_id","created_at");
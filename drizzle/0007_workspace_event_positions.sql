-- A workspace's events in position order: the change mark of conditional reads (its newest
-- event) and a resuming stream's replay.
CREATE INDEX "memory_events_workspace_position_idx" ON "memory_events" USING btree ("workspace_id","xid","id");
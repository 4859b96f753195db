ALTER TABLE "restart_events" ADD COLUMN "started_at" bigint;--> statement-breakpoint
ALTER TABLE "restart_events" ADD COLUMN "started_by" text;--> statement-breakpoint
ALTER TABLE "restart_events" ADD COLUMN "started_epoch" bigint;--> statement-breakpoint
-- Before this column a pending restart's action ran as soon as it was asked for: such a row counts as started then (never run again).
UPDATE "restart_events" SET "started_at" = "requested_at" WHERE "outcome" IS NULL;
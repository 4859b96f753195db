ALTER TABLE "notification_deliveries" ADD COLUMN "message_uid" text;--> statement-breakpoint
ALTER TABLE "notifications" ADD COLUMN "labels" text DEFAULT '{}' NOT NULL;--> statement-breakpoint
CREATE INDEX "notification_deliveries_message" ON "notification_deliveries" USING btree ("message_uid");
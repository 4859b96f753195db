ALTER TABLE `notification_deliveries` ADD `message_uid` text;--> statement-breakpoint
CREATE INDEX `notification_deliveries_message` ON `notification_deliveries` (`message_uid`);--> statement-breakpoint
ALTER TABLE `notifications` ADD `labels` text DEFAULT '{}' NOT NULL;
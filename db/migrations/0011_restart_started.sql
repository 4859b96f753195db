ALTER TABLE `restart_events` ADD `started_at` integer;--> statement-breakpoint
ALTER TABLE `restart_events` ADD `started_by` text;--> statement-breakpoint
ALTER TABLE `restart_events` ADD `started_epoch` integer;--> statement-breakpoint
-- Before this column a pending restart's action ran as soon as it was asked for: such a row counts as started then (never run again).
UPDATE `restart_events` SET `started_at` = `requested_at` WHERE `outcome` IS NULL;
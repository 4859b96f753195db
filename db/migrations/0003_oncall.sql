CREATE TABLE `acknowledgements` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`at` integer NOT NULL,
	`by` text NOT NULL,
	`note` text,
	`state_at_ack` text NOT NULL,
	`cleared_at` integer,
	`cleared_reason` text
);
--> statement-breakpoint
CREATE INDEX `acknowledgements_backend_at` ON `acknowledgements` (`backend_id`,`at`);--> statement-breakpoint
CREATE TABLE `maintenance_periods` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`starts_at` integer NOT NULL,
	`ends_at` integer NOT NULL,
	`by` text NOT NULL,
	`note` text,
	`ended_at` integer,
	`ended_by` text
);
--> statement-breakpoint
CREATE INDEX `maintenance_periods_backend_ends` ON `maintenance_periods` (`backend_id`,`ends_at`);--> statement-breakpoint
CREATE TABLE `notification_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` integer NOT NULL,
	`at` integer NOT NULL,
	`ok` integer NOT NULL,
	`status_code` integer,
	`error` text,
	`duration_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notification_attempts_delivery` ON `notification_attempts` (`delivery_id`,`at`);--> statement-breakpoint
CREATE TABLE `notification_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`notification_id` integer NOT NULL,
	`channel_id` text NOT NULL,
	`channel_type` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`delivered_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notification_deliveries_due` ON `notification_deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `notification_deliveries_one` ON `notification_deliveries` (`notification_id`,`channel_id`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_channel` ON `notification_deliveries` (`channel_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `notifications` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uid` text NOT NULL,
	`event` text NOT NULL,
	`backend_id` text NOT NULL,
	`state` text NOT NULL,
	`previous_state` text,
	`reasons` text NOT NULL,
	`at` integer NOT NULL,
	`link` text,
	`details` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notifications_uid_unique` ON `notifications` (`uid`);--> statement-breakpoint
CREATE INDEX `notifications_backend_at` ON `notifications` (`backend_id`,`at`);--> statement-breakpoint
CREATE INDEX `notifications_at` ON `notifications` (`at`);
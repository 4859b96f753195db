CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor` text,
	`actor_kind` text NOT NULL,
	`action` text NOT NULL,
	`target` text,
	`address` text,
	`detail` text
);
--> statement-breakpoint
CREATE INDEX `audit_log_at` ON `audit_log` (`at`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`operator` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	`address` text,
	`user_agent` text,
	`credential` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `sessions_operator` ON `sessions` (`operator`);--> statement-breakpoint
CREATE INDEX `sessions_expires` ON `sessions` (`expires_at`);
CREATE TABLE `process_starts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`at` integer NOT NULL,
	`process_start_time` real,
	`restart_id` integer,
	`by_stepwatch` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `process_starts_backend_at` ON `process_starts` (`backend_id`,`at`);
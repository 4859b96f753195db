CREATE TABLE `replay_readings` (
	`id` integer PRIMARY KEY NOT NULL,
	`backend_id` text NOT NULL,
	`at` integer NOT NULL,
	`state` text NOT NULL,
	`recommended` integer NOT NULL,
	`reading` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `replay_readings_backend_at` ON `replay_readings` (`backend_id`,`at`);--> statement-breakpoint
CREATE INDEX `replay_readings_at` ON `replay_readings` (`at`);
CREATE TABLE `replay_chunks` (
	`id` integer PRIMARY KEY NOT NULL,
	`backend_id` text NOT NULL,
	`first_at` integer NOT NULL,
	`last_at` integer NOT NULL,
	`n` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `replay_chunks_backend_last` ON `replay_chunks` (`backend_id`,`last_at`);--> statement-breakpoint
CREATE INDEX `replay_chunks_last` ON `replay_chunks` (`last_at`);
CREATE TABLE `restart_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`requested_at` integer NOT NULL,
	`requested_by` text NOT NULL,
	`note` text,
	`state_at_request` text NOT NULL,
	`healthy_at_request` integer NOT NULL,
	`running_at_request` real,
	`waiting_at_request` real,
	`process_start_time_at_request` real,
	`evidence` text NOT NULL,
	`override_cooldown` integer DEFAULT false NOT NULL,
	`confirmed_healthy` integer DEFAULT false NOT NULL,
	`action` text NOT NULL,
	`command_exit_code` integer,
	`command_output` text,
	`command_error` text,
	`command_finished_at` integer,
	`recovered_at` integer,
	`downtime_seconds` real,
	`outcome` text,
	`resolved_at` integer,
	`resolution` text
);
--> statement-breakpoint
CREATE INDEX `restart_events_backend_requested` ON `restart_events` (`backend_id`,`requested_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `restart_events_one_pending` ON `restart_events` (`backend_id`) WHERE outcome IS NULL;--> statement-breakpoint
CREATE TABLE `sample_minutes` (
	`backend_id` text NOT NULL,
	`minute` integer NOT NULL,
	`n` integer NOT NULL,
	`running_avg` real,
	`running_max` real,
	`waiting_avg` real,
	`waiting_max` real,
	`steps_per_second` real,
	`generation_tokens_per_second` real,
	`prompt_tokens_per_second` real,
	`kv_cache_usage` real,
	`worst_state` text NOT NULL,
	PRIMARY KEY(`backend_id`, `minute`)
);
--> statement-breakpoint
CREATE INDEX `sample_minutes_minute` ON `sample_minutes` (`minute`);--> statement-breakpoint
CREATE TABLE `samples` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`at` integer NOT NULL,
	`state` text NOT NULL,
	`outcome` text NOT NULL,
	`error` text,
	`latency_ms` integer NOT NULL,
	`running` real,
	`waiting` real,
	`steps` real,
	`prompt_tokens` real,
	`generation_tokens` real,
	`finished_requests` real,
	`kv_cache_usage` real,
	`process_start_time` real,
	`steps_per_second` real,
	`generation_tokens_per_second` real,
	`prompt_tokens_per_second` real,
	`probe_ok` integer,
	`probe_latency_ms` integer,
	`reading` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `samples_backend_at` ON `samples` (`backend_id`,`at`);--> statement-breakpoint
CREATE INDEX `samples_at` ON `samples` (`at`);--> statement-breakpoint
CREATE TABLE `transitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`target_id` text NOT NULL,
	`at` integer NOT NULL,
	`from_state` text,
	`to_state` text NOT NULL,
	`reasons` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `transitions_target_at` ON `transitions` (`kind`,`target_id`,`at`);
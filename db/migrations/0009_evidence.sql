CREATE TABLE `evidence_bundles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`backend_id` text NOT NULL,
	`trigger` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`expires_at` integer NOT NULL,
	`size_bytes` integer NOT NULL,
	`bundle` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `evidence_bundles_backend_started` ON `evidence_bundles` (`backend_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `evidence_bundles_started` ON `evidence_bundles` (`started_at`);--> statement-breakpoint
CREATE TABLE `restart_evidence` (
	`restart_event_id` integer PRIMARY KEY NOT NULL,
	`evidence_id` integer NOT NULL,
	FOREIGN KEY (`evidence_id`) REFERENCES `evidence_bundles`(`id`) ON UPDATE no action ON DELETE cascade
);

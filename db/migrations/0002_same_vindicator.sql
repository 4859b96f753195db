ALTER TABLE `samples` ADD `folded` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `samples_unfolded` ON `samples` (`backend_id`,`at`) WHERE folded = 0;
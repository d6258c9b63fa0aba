ALTER TABLE "deploys" ADD COLUMN "message" text;--> statement-breakpoint
ALTER TABLE "deploys" ADD COLUMN "last_activity_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "deploys" ADD COLUMN "files_added" integer;--> statement-breakpoint
ALTER TABLE "deploys" ADD COLUMN "files_changed" integer;--> statement-breakpoint
ALTER TABLE "deploys" ADD COLUMN "files_removed" integer;--> statement-breakpoint
CREATE INDEX "deploys_unfinished_activity_idx" ON "deploys" USING btree ("last_activity_at") WHERE state in ('uploading', 'ready');
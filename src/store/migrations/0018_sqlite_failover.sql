ALTER TABLE "sqlite_databases" ADD COLUMN "moved_from" text;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "moved_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "move_reason" text;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "failover_blocked" text;--> statement-breakpoint
ALTER TABLE "sqlite_shards" ADD COLUMN "left_at" timestamp with time zone;
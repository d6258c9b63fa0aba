ALTER TABLE "sqlite_databases" ADD COLUMN "replication_enabled" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "replication_state" text DEFAULT 'pending' NOT NULL;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "replicated_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "restorable_from" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "replica_generation" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sqlite_shards" ADD COLUMN "draining" boolean DEFAULT false NOT NULL;

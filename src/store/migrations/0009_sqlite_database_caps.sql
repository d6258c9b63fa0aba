ALTER TABLE "sqlite_databases" ADD COLUMN "max_size_bytes" bigint;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD COLUMN "max_users" integer;
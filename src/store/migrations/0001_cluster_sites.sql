ALTER TABLE "sites" ADD COLUMN "detached_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "resource_uid" text;--> statement-breakpoint
CREATE UNIQUE INDEX "sites_resource_uid_key" ON "sites" USING btree ("resource_uid");
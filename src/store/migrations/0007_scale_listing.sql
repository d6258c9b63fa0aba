DROP INDEX "site_files_listing_idx";--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "folder_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "hidden_file_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Paths compare byte by byte whatever the server's locale (equality is unchanged: both collations
-- are deterministic), so that everything under a folder is one range of the primary key.
ALTER TABLE "site_files" ALTER COLUMN "path" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
-- The new counters, for the rows already there.
UPDATE "sites" SET "folder_count" = "c"."folders", "hidden_file_count" = "c"."hidden"
FROM (
  SELECT "site_id",
    count(*) FILTER (WHERE "kind" = 'folder') AS "folders",
    count(*) FILTER (WHERE "kind" = 'file' AND "name" = '.gitkeep') AS "hidden"
  FROM "site_files" GROUP BY "site_id"
) AS "c"
WHERE "c"."site_id" = "sites"."id";--> statement-breakpoint
CREATE INDEX "site_files_order_idx" ON "site_files" USING btree ("site_id","depth",("kind" <> 'folder'),(lower("name") collate "C"),"name" collate "C","path" collate "C","kind","size") WHERE "site_files"."kind" <> 'file' or "site_files"."name" <> '.gitkeep';--> statement-breakpoint
-- For the periodic recount of the counters (src/platform/counters.ts): sites oldest-checked first.
ALTER TABLE "sites" ADD COLUMN "counters_checked_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE INDEX "sites_counters_checked_idx" ON "sites" USING btree ("counters_checked_at");
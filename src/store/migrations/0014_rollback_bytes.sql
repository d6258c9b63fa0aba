ALTER TABLE "live_deploys" ADD COLUMN "rollback_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "live_deploys" ADD COLUMN "rollback_deploys" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- What the deploys kept for rollback already hold (deploy-retention.ts, pruneDeploys); the bound
-- applies from each site's next switch.
UPDATE "live_deploys" AS l SET "rollback_bytes" = k."bytes", "rollback_deploys" = k."deploys"
FROM (
  SELECT lv."site_id",
    (SELECT count(*)::int FROM "deploys" d
      WHERE d."site_id" = lv."site_id" AND d."state" = 'published' AND d."id" <> lv."deploy_id") AS "deploys",
    (SELECT coalesce(sum(b."size"), 0) FROM (
      SELECT max(f."size") AS "size" FROM "deploy_files" f
      JOIN "deploys" d ON d."id" = f."deploy_id" AND d."state" = 'published' AND d."id" <> lv."deploy_id"
      WHERE f."site_id" = lv."site_id" AND NOT EXISTS (
        SELECT 1 FROM "deploy_files" c WHERE c."deploy_id" = lv."deploy_id" AND c."hash" = f."hash")
      GROUP BY f."hash") b) AS "bytes"
  FROM "live_deploys" lv
) k
WHERE k."site_id" = l."site_id";

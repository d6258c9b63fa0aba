-- A manifest's paths compare byte by byte, like the live set's (site_files.path, 0007): a join
-- of the two on path (a switch, the changes against the live site) then uses either table's
-- primary key. Under two different collations it could use neither and compared every pair of
-- rows. Equality is unchanged (both collations are deterministic); every ordering of these paths
-- already said collate "C".
ALTER TABLE "deploy_files" ALTER COLUMN "path" SET DATA TYPE text COLLATE "C";
--> statement-breakpoint
-- A manifest row is written twice: at create without its size, then given it by the upload. With
-- room left on its page the second write is a heap-only update (the size is in no index), instead
-- of three new index entries per row; a deploy's rows are otherwise never updated.
ALTER TABLE "deploy_files" SET (fillfactor = 50);
--> statement-breakpoint
-- The collation change dropped the column's statistics (a sample: quick on any size).
ANALYZE "deploy_files";

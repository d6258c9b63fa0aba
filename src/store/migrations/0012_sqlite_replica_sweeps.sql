CREATE TABLE "sqlite_replica_sweeps" (
	"database_id" integer PRIMARY KEY NOT NULL,
	"site_id" integer NOT NULL,
	"path" text NOT NULL,
	"sweep_after" timestamp with time zone NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "sqlite_replica_sweeps_due" ON "sqlite_replica_sweeps" USING btree ("sweep_after");
CREATE TABLE "blob_claims" (
	"hash" text PRIMARY KEY NOT NULL,
	"generation" bigint DEFAULT 0 NOT NULL,
	"claimed_until" timestamp with time zone
);

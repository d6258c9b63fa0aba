CREATE TABLE "edge_processes" (
	"id" text PRIMARY KEY NOT NULL,
	"lease_until" timestamp with time zone NOT NULL
);

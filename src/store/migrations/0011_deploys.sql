CREATE TABLE "deploy_files" (
	"deploy_id" text NOT NULL,
	"site_id" integer NOT NULL,
	"path" text NOT NULL,
	"hash" text NOT NULL,
	"size" bigint,
	"content_type" text NOT NULL,
	CONSTRAINT "deploy_files_deploy_id_path_pk" PRIMARY KEY("deploy_id","path")
);
--> statement-breakpoint
CREATE TABLE "deploys" (
	"id" text PRIMARY KEY NOT NULL,
	"site_id" integer NOT NULL,
	"state" text NOT NULL,
	"source" text NOT NULL,
	"draft" boolean DEFAULT false NOT NULL,
	"file_count" integer NOT NULL,
	"missing" integer DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"key_id" integer,
	"key_prefix" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finalized_at" timestamp with time zone,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "live_deploys" (
	"site_id" integer PRIMARY KEY NOT NULL,
	"deploy_id" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deploy_files" ADD CONSTRAINT "deploy_files_deploy_id_deploys_id_fk" FOREIGN KEY ("deploy_id") REFERENCES "public"."deploys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deploys" ADD CONSTRAINT "deploys_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "live_deploys" ADD CONSTRAINT "live_deploys_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "live_deploys" ADD CONSTRAINT "live_deploys_deploy_id_deploys_id_fk" FOREIGN KEY ("deploy_id") REFERENCES "public"."deploys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deploy_files_site_hash_idx" ON "deploy_files" USING btree ("site_id","hash");--> statement-breakpoint
CREATE INDEX "deploy_files_hash_idx" ON "deploy_files" USING btree ("hash");--> statement-breakpoint
CREATE INDEX "deploys_site_created_idx" ON "deploys" USING btree ("site_id","created_at");
CREATE TABLE "sqlite_databases" (
	"id" serial PRIMARY KEY NOT NULL,
	"site_id" integer NOT NULL,
	"account_id" integer NOT NULL,
	"path" text NOT NULL,
	"shard" text,
	"size_bytes" bigint DEFAULT 0 NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sqlite_leases" (
	"database_id" integer PRIMARY KEY NOT NULL,
	"shard" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sqlite_sessions" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"database_id" integer NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sqlite_shards" (
	"name" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sqlite_tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"database_id" integer NOT NULL,
	"token_hash" text NOT NULL,
	"name" text NOT NULL,
	"permissions" text NOT NULL,
	"requires_user_auth" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "sqlite_users" (
	"id" serial PRIMARY KEY NOT NULL,
	"database_id" integer NOT NULL,
	"email" text NOT NULL,
	"display_name" text,
	"password_hash" text NOT NULL,
	"role" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_login_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD CONSTRAINT "sqlite_databases_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_databases" ADD CONSTRAINT "sqlite_databases_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_leases" ADD CONSTRAINT "sqlite_leases_database_id_sqlite_databases_id_fk" FOREIGN KEY ("database_id") REFERENCES "public"."sqlite_databases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_sessions" ADD CONSTRAINT "sqlite_sessions_user_id_sqlite_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."sqlite_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_sessions" ADD CONSTRAINT "sqlite_sessions_database_id_sqlite_databases_id_fk" FOREIGN KEY ("database_id") REFERENCES "public"."sqlite_databases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_tokens" ADD CONSTRAINT "sqlite_tokens_database_id_sqlite_databases_id_fk" FOREIGN KEY ("database_id") REFERENCES "public"."sqlite_databases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sqlite_users" ADD CONSTRAINT "sqlite_users_database_id_sqlite_databases_id_fk" FOREIGN KEY ("database_id") REFERENCES "public"."sqlite_databases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sqlite_databases_site_path_key" ON "sqlite_databases" USING btree ("site_id","path");--> statement-breakpoint
CREATE INDEX "sqlite_databases_account_idx" ON "sqlite_databases" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "sqlite_sessions_hash_key" ON "sqlite_sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "sqlite_sessions_user_idx" ON "sqlite_sessions" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "sqlite_tokens_hash_key" ON "sqlite_tokens" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "sqlite_tokens_database_idx" ON "sqlite_tokens" USING btree ("database_id");--> statement-breakpoint
CREATE UNIQUE INDEX "sqlite_users_database_email_key" ON "sqlite_users" USING btree ("database_id","email");
CREATE TABLE "server_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "form_submission_usage" (
	"account_id" integer NOT NULL,
	"month" text NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "form_submission_usage_account_id_month_pk" PRIMARY KEY("account_id","month")
);
--> statement-breakpoint
CREATE TABLE "form_submissions" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"form_id" integer NOT NULL,
	"data" jsonb NOT NULL,
	"is_spam" boolean NOT NULL,
	"spam_score" integer NOT NULL,
	"spam_reasons" jsonb,
	"is_archived" boolean DEFAULT false NOT NULL,
	"is_read" boolean DEFAULT false NOT NULL,
	"read_at" timestamp with time zone,
	"submitted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ip_hash" text,
	"user_agent" text,
	"referer" text,
	"origin" text,
	"content_hash" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "forms" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"site_id" integer NOT NULL,
	"account_id" integer NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"description" text,
	"is_active" boolean DEFAULT true NOT NULL,
	"success_message" text,
	"redirect_url" text,
	"notification_email" text,
	"fields" jsonb NOT NULL,
	"submission_count" integer DEFAULT 0 NOT NULL,
	"resource_uid" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "form_submission_usage" ADD CONSTRAINT "form_submission_usage_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_submissions" ADD CONSTRAINT "form_submissions_form_id_forms_id_fk" FOREIGN KEY ("form_id") REFERENCES "public"."forms"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "forms" ADD CONSTRAINT "forms_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "forms" ADD CONSTRAINT "forms_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "form_submissions_uuid_key" ON "form_submissions" USING btree ("uuid");--> statement-breakpoint
CREATE INDEX "form_submissions_form_time_idx" ON "form_submissions" USING btree ("form_id","submitted_at");--> statement-breakpoint
CREATE INDEX "form_submissions_content_idx" ON "form_submissions" USING btree ("form_id","content_hash","submitted_at");--> statement-breakpoint
CREATE INDEX "form_submissions_ip_idx" ON "form_submissions" USING btree ("form_id","ip_hash","submitted_at");--> statement-breakpoint
CREATE UNIQUE INDEX "forms_uuid_key" ON "forms" USING btree ("uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "forms_site_slug_key" ON "forms" USING btree ("site_id","slug");--> statement-breakpoint
CREATE INDEX "forms_account_idx" ON "forms" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "forms_resource_uid_key" ON "forms" USING btree ("resource_uid");
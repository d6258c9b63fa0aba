CREATE TABLE "form_notification_addresses" (
	"id" serial PRIMARY KEY NOT NULL,
	"account_id" integer NOT NULL,
	"email" text NOT NULL,
	"confirmed_at" timestamp with time zone,
	"token_hash" text,
	"token_expires_at" timestamp with time zone,
	"mailed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "account_sessions" ADD COLUMN "operator" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "account_sessions" ADD COLUMN "confirmed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "session_id" integer;--> statement-breakpoint
ALTER TABLE "form_notification_addresses" ADD CONSTRAINT "form_notification_addresses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "form_notification_addresses_account_email_key" ON "form_notification_addresses" USING btree ("account_id","email");--> statement-breakpoint
CREATE UNIQUE INDEX "form_notification_addresses_token_key" ON "form_notification_addresses" USING btree ("token_hash");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_session_id_account_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."account_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_session_idx" ON "api_keys" USING btree ("session_id");--> statement-breakpoint
-- Temporary keys minted before keys were bound to a session cannot be bound now: they go (at
-- most a day early; the console mints a new one on its next 401).
DELETE FROM "api_keys" WHERE "kind" = 'temporary';--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_temporary_session_check" CHECK (("api_keys"."kind" = 'temporary') = ("api_keys"."session_id" is not null));
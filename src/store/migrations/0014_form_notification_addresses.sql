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
ALTER TABLE "form_notification_addresses" ADD CONSTRAINT "form_notification_addresses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "form_notification_addresses_account_email_key" ON "form_notification_addresses" USING btree ("account_id","email");--> statement-breakpoint
CREATE UNIQUE INDEX "form_notification_addresses_token_key" ON "form_notification_addresses" USING btree ("token_hash");
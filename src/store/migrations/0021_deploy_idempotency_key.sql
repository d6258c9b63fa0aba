ALTER TABLE "deploys" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
ALTER TABLE "deploys" ADD COLUMN "idempotency_fingerprint" text;--> statement-breakpoint
CREATE UNIQUE INDEX "deploys_site_idempotency_key_idx" ON "deploys" USING btree ("site_id","idempotency_key") WHERE "deploys"."idempotency_key" is not null;
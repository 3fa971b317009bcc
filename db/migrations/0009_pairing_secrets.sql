-- Issue 55: a pairing claim's id is the device's only secret, so the table keeps neither it nor the device key in
-- plain text. `claim_hash` is the SHA-256 (hex) of the claim id, which the device presents on every poll; the
-- device key is no longer stored at all: the first poll that proves the claim id mints it (`key_issued_at`).
ALTER TABLE "pairing_claims" RENAME COLUMN "id" TO "claim_hash";
--> statement-breakpoint
UPDATE "pairing_claims" SET "claim_hash" = encode(sha256(convert_to("claim_hash", 'UTF8')), 'hex');
--> statement-breakpoint
ALTER TABLE "pairing_claims" ADD COLUMN "key_issued_at" timestamp (3) with time zone;
--> statement-breakpoint
-- A claim whose key was already handed over keeps that key; one whose key was still waiting for the device's poll
-- has that key revoked (its only plain copy goes with the column) and mints a fresh one at the poll, as new claims do.
UPDATE "pairing_claims" SET "key_issued_at" = coalesce("last_polled_at", "created_at") WHERE "status" = 'claimed' AND "device_key" IS NULL;
--> statement-breakpoint
UPDATE "api_keys" SET "revoked_at" = now() WHERE "revoked_at" IS NULL AND "token_hash" IN (
  SELECT encode(sha256(convert_to("device_key", 'UTF8')), 'hex') FROM "pairing_claims" WHERE "device_key" IS NOT NULL);
--> statement-breakpoint
ALTER TABLE "pairing_claims" DROP COLUMN "device_key";

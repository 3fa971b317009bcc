CREATE TABLE "pairing_claims" (
	"id" text PRIMARY KEY NOT NULL,
	"user_code" text NOT NULL,
	"model" text,
	"hardware_id" text,
	"status" text DEFAULT 'pending' NOT NULL,
	"account_id" text,
	"device_id" text,
	"device_key" text,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"last_polled_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "pairing_claims_status_check" CHECK ("pairing_claims"."status" in ('pending', 'claimed', 'expired'))
);
--> statement-breakpoint
CREATE TABLE "sensor_devices" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"model" text,
	"hardware_id" text,
	"channels" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"unmapped_channels" text[] DEFAULT '{}'::text[] NOT NULL,
	"last_seen_at" timestamp (3) with time zone,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	CONSTRAINT "sensor_devices_account_id_key" UNIQUE("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "sensor_readings" (
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"channel" text NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"value" double precision NOT NULL,
	"metric" text,
	"environment_id" text,
	CONSTRAINT "sensor_readings_device_channel_ts_key" UNIQUE("device_id","channel","ts")
);
--> statement-breakpoint
ALTER TABLE "pairing_claims" ADD CONSTRAINT "pairing_claims_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sensor_devices" ADD CONSTRAINT "sensor_devices_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "pairing_claims_pending_code_idx" ON "pairing_claims" USING btree ("user_code") WHERE "pairing_claims"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "sensor_devices_account_updated_idx" ON "sensor_devices" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "sensor_readings_account_ts_idx" ON "sensor_readings" USING btree ("account_id","ts");--> statement-breakpoint
CREATE INDEX "sensor_readings_ts_brin" ON "sensor_readings" USING brin ("ts");
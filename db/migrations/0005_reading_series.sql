-- The series catalogue: every (account, device, channel, metric, environment) that readings have been stored
-- under, with a small integer id. A readings query's cost is bounded from it before the query runs (the series in
-- scope × the buckets in the window), and rollups are kept per series id. Kept on write, never pruned by queries.
CREATE TABLE "reading_series" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"channel" text NOT NULL,
	"metric" text,
	"environment_id" text,
	CONSTRAINT "reading_series_key" UNIQUE NULLS NOT DISTINCT ("account_id", "device_id", "channel", "metric", "environment_id")
);
--> statement-breakpoint
CREATE INDEX "reading_series_account_environment_idx" ON "reading_series" USING btree ("account_id", "environment_id");
--> statement-breakpoint
INSERT INTO "reading_series" ("account_id", "device_id", "channel", "metric", "environment_id")
SELECT DISTINCT "account_id", "device_id", "channel", "metric", "environment_id" FROM "sensor_readings"
ON CONFLICT DO NOTHING;

-- Rollups of readings per series at 1 minute, 1 hour and 1 day (ingest/planner.ts reads them): enough to answer
-- avg (sum ÷ count), min, max, count and last exactly for any bucket that is a whole number of a level's buckets.
-- Kept by the SQL store's write in the statement that inserts the readings, from the rows that statement inserted,
-- so a retried batch or a redelivered message (skipped by the unique key) never counts twice, and a late reading
-- updates its old buckets. Each reading row names its series (reading_series.id) for that.
ALTER TABLE "sensor_readings" ADD COLUMN "series_id" integer;
--> statement-breakpoint
UPDATE "sensor_readings" r SET "series_id" = s."id" FROM "reading_series" s
WHERE s."account_id" = r."account_id" AND s."device_id" = r."device_id" AND s."channel" = r."channel"
  AND s."metric" IS NOT DISTINCT FROM r."metric" AND s."environment_id" IS NOT DISTINCT FROM r."environment_id";
--> statement-breakpoint
CREATE TABLE "reading_rollups_1m" (
	"series_id" integer NOT NULL, "bucket" timestamp (3) with time zone NOT NULL,
	"count" integer NOT NULL, "sum" double precision NOT NULL, "min" double precision NOT NULL, "max" double precision NOT NULL,
	"first_ts" timestamp (3) with time zone NOT NULL, "first_value" double precision NOT NULL,
	"last_ts" timestamp (3) with time zone NOT NULL, "last_value" double precision NOT NULL,
	CONSTRAINT "reading_rollups_1m_pkey" PRIMARY KEY ("series_id", "bucket")
) WITH (fillfactor = 80);
--> statement-breakpoint
CREATE TABLE "reading_rollups_1h" (LIKE "reading_rollups_1m" INCLUDING ALL);
--> statement-breakpoint
CREATE TABLE "reading_rollups_1d" (LIKE "reading_rollups_1m" INCLUDING ALL);
--> statement-breakpoint
INSERT INTO "reading_rollups_1m" SELECT "series_id", date_bin('1 minute', "ts", timestamptz '1970-01-01 00:00:00+00'), count(*), sum("value"), min("value"), max("value"),
  min("ts"), (array_agg("value" ORDER BY "ts"))[1], max("ts"), (array_agg("value" ORDER BY "ts" DESC))[1]
FROM "sensor_readings" GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "reading_rollups_1h" SELECT "series_id", date_bin('1 hour', "bucket", timestamptz '1970-01-01 00:00:00+00'), sum("count"), sum("sum"), min("min"), max("max"),
  min("first_ts"), (array_agg("first_value" ORDER BY "first_ts"))[1], max("last_ts"), (array_agg("last_value" ORDER BY "last_ts" DESC))[1]
FROM "reading_rollups_1m" GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "reading_rollups_1d" SELECT "series_id", date_bin('1 day', "bucket", timestamptz '1970-01-01 00:00:00+00'), sum("count"), sum("sum"), min("min"), max("max"),
  min("first_ts"), (array_agg("first_value" ORDER BY "first_ts"))[1], max("last_ts"), (array_agg("last_value" ORDER BY "last_ts" DESC))[1]
FROM "reading_rollups_1h" GROUP BY 1, 2;

-- The compact readings layout (issue 30): a reading is (channel, series, time, value) in a table partitioned by
-- week, where it took a row of five text ids before (300 bytes a reading with indexes, now about 90). Expiry drops
-- whole partitions (ingest/stores/sql-layout.ts makes them ahead and drops them behind).
--   reading_channels: a small id per device channel; readings are unique on (channel, time), as they were on
--     (device, channel, time), so a retried batch adds nothing even if the channel's mapping changed meanwhile.
--   reading_series gains its channel's id; a reading names its series (its metric and environment at ingest).
--   The readings of the old table stay where they are, renamed sensor_readings_legacy, and are moved in batches
--   by the running service (online, resumable: each batch is one statement); reading_rows shows both meanwhile.
--   The rollup tables become partitioned (a week of minutes, a year of hours or days, per partition); their rows
--   so far stay in one partition each, reaching up to the grid, dropped when the newest of them passes retention.
--   reading_latest: each series' newest reading, kept by the write, so "latest" reads one row per series.
ALTER TABLE "sensor_readings" RENAME TO "sensor_readings_legacy";
--> statement-breakpoint
CREATE TABLE "reading_channels" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
	"device_id" text NOT NULL,
	"channel" text NOT NULL,
	CONSTRAINT "reading_channels_key" UNIQUE ("device_id", "channel")
);
--> statement-breakpoint
INSERT INTO "reading_channels" ("device_id", "channel") SELECT DISTINCT "device_id", "channel" FROM "reading_series" ORDER BY 1, 2;
--> statement-breakpoint
ALTER TABLE "reading_series" ADD COLUMN "channel_id" integer;
--> statement-breakpoint
UPDATE "reading_series" s SET "channel_id" = c."id" FROM "reading_channels" c WHERE c."device_id" = s."device_id" AND c."channel" = s."channel";
--> statement-breakpoint
ALTER TABLE "reading_series" ALTER COLUMN "channel_id" SET NOT NULL;
--> statement-breakpoint
CREATE TABLE "readings" (
	"channel_id" integer NOT NULL,
	"series_id" integer NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"value" double precision NOT NULL,
	CONSTRAINT "readings_pkey" PRIMARY KEY ("channel_id", "ts")
) PARTITION BY RANGE ("ts");
--> statement-breakpoint
CREATE TABLE "reading_latest" (
	"series_id" integer PRIMARY KEY,
	"ts" timestamp (3) with time zone NOT NULL,
	"value" double precision NOT NULL
);
--> statement-breakpoint
INSERT INTO "reading_latest" SELECT DISTINCT ON ("series_id") "series_id", "last_ts", "last_value" FROM "reading_rollups_1d" ORDER BY "series_id", "bucket" DESC;
--> statement-breakpoint
DO $$
DECLARE
	level text;
	grid_end timestamptz;
	has_rows boolean;
BEGIN
	FOREACH level IN ARRAY ARRAY['1m', '1h', '1d'] LOOP
		EXECUTE format('ALTER TABLE %I RENAME TO %I', 'reading_rollups_' || level, 'reading_rollups_' || level || '_legacy');
		EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', 'reading_rollups_' || level || '_legacy', 'reading_rollups_' || level || '_pkey', 'reading_rollups_' || level || '_legacy_pkey');
		EXECUTE format('CREATE TABLE %I (
			"series_id" integer NOT NULL, "bucket" timestamp (3) with time zone NOT NULL,
			"count" integer NOT NULL, "sum" double precision NOT NULL, "min" double precision NOT NULL, "max" double precision NOT NULL,
			"first_ts" timestamp (3) with time zone NOT NULL, "first_value" double precision NOT NULL,
			"last_ts" timestamp (3) with time zone NOT NULL, "last_value" double precision NOT NULL,
			CONSTRAINT %I PRIMARY KEY ("series_id", "bucket")
		) PARTITION BY RANGE ("bucket")', 'reading_rollups_' || level, 'reading_rollups_' || level || '_pkey');
		-- Weeks (Monday 00:00 UTC) for minutes, years for hours and days: the grids ingest/stores/sql-layout.ts uses.
		grid_end := CASE WHEN level = '1m'
			THEN (date_trunc('week', now() AT TIME ZONE 'UTC') + interval '7 days') AT TIME ZONE 'UTC'
			ELSE (date_trunc('year', now() AT TIME ZONE 'UTC') + interval '1 year') AT TIME ZONE 'UTC' END;
		EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', 'reading_rollups_' || level || '_legacy') INTO STRICT has_rows;
		IF has_rows THEN
			EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', 'reading_rollups_' || level, 'reading_rollups_' || level || '_legacy', grid_end);
		ELSE
			EXECUTE format('DROP TABLE %I', 'reading_rollups_' || level || '_legacy');
		END IF;
	END LOOP;
	-- A database that never held a reading has nothing to move.
	IF NOT EXISTS (SELECT 1 FROM "sensor_readings_legacy") THEN
		DROP TABLE "sensor_readings_legacy";
		CREATE VIEW "reading_rows" AS SELECT "channel_id", "series_id", "ts", "value" FROM "readings";
	ELSE
		CREATE VIEW "reading_rows" AS SELECT "channel_id", "series_id", "ts", "value" FROM "readings"
			UNION ALL SELECT s."channel_id", l."series_id", l."ts", l."value" FROM "sensor_readings_legacy" l JOIN "reading_series" s ON s."id" = l."series_id";
	END IF;
END $$;
--> statement-breakpoint
-- Every reading with its names, for people and for tools that read SQL: not what the service queries.
CREATE VIEW "sensor_readings" AS SELECT s."account_id", s."device_id", s."channel", r."ts", r."value", s."metric", s."environment_id", r."series_id"
	FROM "reading_rows" r JOIN "reading_series" s ON s."id" = r."series_id";

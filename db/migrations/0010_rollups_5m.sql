-- Five-minute rollups (issue 57): a dashboard's day in 5-minute buckets read from minute rollups read five rows a
-- bucket. The same columns as the other levels, partitioned by week as the minute rollups are
-- (ingest/stores/sql-layout.ts makes the weeks ahead of the writes and drops them behind). Rolled up from the minute
-- rollups already stored into one partition reaching up to the grid, as migration 0007 kept the rollups it found,
-- dropped whole once the newest of them passes the minute rollups' retention.
DO $$
DECLARE
	grid_end timestamptz;
BEGIN
	CREATE TABLE "reading_rollups_5m" (
		"series_id" integer NOT NULL, "bucket" timestamp (3) with time zone NOT NULL,
		"count" integer NOT NULL, "sum" double precision NOT NULL, "min" double precision NOT NULL, "max" double precision NOT NULL,
		"first_ts" timestamp (3) with time zone NOT NULL, "first_value" double precision NOT NULL,
		"last_ts" timestamp (3) with time zone NOT NULL, "last_value" double precision NOT NULL,
		CONSTRAINT "reading_rollups_5m_pkey" PRIMARY KEY ("series_id", "bucket")
	) PARTITION BY RANGE ("bucket");
	IF EXISTS (SELECT 1 FROM "reading_rollups_1m") THEN
		-- The end of this week, or of the week of the latest minute stored if later.
		SELECT (date_trunc('week', greatest(now(), max("bucket")) AT TIME ZONE 'UTC') + interval '7 days') AT TIME ZONE 'UTC' INTO STRICT grid_end FROM "reading_rollups_1m";
		EXECUTE format('CREATE TABLE "reading_rollups_5m_legacy" PARTITION OF "reading_rollups_5m" FOR VALUES FROM (MINVALUE) TO (%L) WITH (fillfactor = 80)', grid_end);
		-- Each bucket's minutes summed in time order, as a bucket's readings are.
		INSERT INTO "reading_rollups_5m" SELECT "series_id", date_bin('5 minutes', "bucket", timestamptz '1970-01-01 00:00:00+00'), sum("count"), sum("sum" ORDER BY "bucket"), min("min"), max("max"),
			min("first_ts"), (array_agg("first_value" ORDER BY "first_ts"))[1], max("last_ts"), (array_agg("last_value" ORDER BY "last_ts" DESC))[1]
		FROM "reading_rollups_1m" GROUP BY 1, 2;
	END IF;
END $$;

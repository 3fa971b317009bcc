-- The minutes written to a QuestDB readings table whose rollup tables of our own (QuestDB 7.4 has no materialized
-- views) may not reflect them yet: marked on write, removed by the refresh once settled (ingest/stores/questdb-rollups.ts).
CREATE TABLE "reading_rollup_marks" (
	"store" text NOT NULL,
	"minute" timestamp (3) with time zone NOT NULL,
	"marked_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"refreshed_at" timestamp (3) with time zone,
	CONSTRAINT "reading_rollup_marks_pkey" PRIMARY KEY ("store", "minute")
);

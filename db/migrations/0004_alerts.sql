CREATE TABLE "alert_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text,
	"environment_id" text,
	"device_id" text,
	"channel" text,
	"metric" text NOT NULL,
	"min" double precision,
	"max" double precision,
	"hysteresis" double precision DEFAULT 0 NOT NULL,
	"for_seconds" integer DEFAULT 0 NOT NULL,
	"stale_after_seconds" integer,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	CONSTRAINT "alert_rules_target_check" CHECK (("alert_rules"."environment_id" is not null and "alert_rules"."device_id" is null and "alert_rules"."channel" is null) or ("alert_rules"."environment_id" is null and "alert_rules"."device_id" is not null and "alert_rules"."channel" is not null))
);
--> statement-breakpoint
CREATE TABLE "alerts" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"rule_id" text NOT NULL,
	"kind" text NOT NULL,
	"state" text DEFAULT 'open' NOT NULL,
	"environment_id" text,
	"device_id" text NOT NULL,
	"channel" text NOT NULL,
	"metric" text NOT NULL,
	"rule" jsonb NOT NULL,
	"triggered_at" timestamp (3) with time zone NOT NULL,
	"window_from" timestamp (3) with time zone NOT NULL,
	"window_to" timestamp (3) with time zone NOT NULL,
	"value_first" double precision,
	"value_last" double precision,
	"value_min" double precision,
	"value_max" double precision,
	"value_count" integer,
	"resolved_at" timestamp (3) with time zone,
	"resolved_value" double precision,
	"resolved_reason" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alerts_kind_check" CHECK ("alerts"."kind" in ('threshold', 'stale')),
	CONSTRAINT "alerts_state_check" CHECK ("alerts"."state" in ('open', 'resolved'))
);
--> statement-breakpoint
ALTER TABLE "alert_rules" ADD CONSTRAINT "alert_rules_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_rules_account_updated_idx" ON "alert_rules" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_one_open_idx" ON "alerts" USING btree ("rule_id","kind","device_id","channel") WHERE "alerts"."state" = 'open';--> statement-breakpoint
CREATE INDEX "alerts_account_id_idx" ON "alerts" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "alerts_open_idx" ON "alerts" USING btree ("state") WHERE "alerts"."state" = 'open';
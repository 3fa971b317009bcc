CREATE TABLE "activities" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"animal_id" text NOT NULL,
	"type" text NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "animals" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"reference_id" text,
	"species_id" text NOT NULL,
	"sex" text DEFAULT 'unknown' NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"morph" text,
	"traits" text[] DEFAULT '{}'::text[] NOT NULL,
	"birth_date" date,
	"acquired_date" date,
	"weight_grams" double precision,
	"weighed_at" timestamp (3) with time zone,
	"environment_id" text,
	"dam_id" text,
	"sire_id" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"notes" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	CONSTRAINT "animals_account_id_key" UNIQUE("account_id","id"),
	CONSTRAINT "animals_sex_check" CHECK ("animals"."sex" in ('male', 'female', 'unknown')),
	CONSTRAINT "animals_status_check" CHECK ("animals"."status" in ('active', 'sold', 'deceased', 'on_loan'))
);
--> statement-breakpoint
CREATE TABLE "breeding_records" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"species_id" text NOT NULL,
	"dam_id" text,
	"sire_id" text,
	"season" integer NOT NULL,
	"status" text NOT NULL,
	"paired_on" date,
	"separated_on" date,
	"locks_observed" integer DEFAULT 0 NOT NULL,
	"ovulation_on" date,
	"pre_lay_shed_on" date,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "breeding_records_account_id_key" UNIQUE("account_id","id"),
	CONSTRAINT "breeding_records_status_check" CHECK ("breeding_records"."status" in ('planned', 'paired', 'gravid', 'laid', 'unsuccessful'))
);
--> statement-breakpoint
CREATE TABLE "clutches" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"breeding_record_id" text,
	"species_id" text NOT NULL,
	"dam_id" text,
	"sire_id" text,
	"status" text NOT NULL,
	"laid_on" date NOT NULL,
	"egg_count" integer NOT NULL,
	"fertile_count" integer,
	"slug_count" integer,
	"hatched_count" integer,
	"incubator_id" text,
	"incubation_temperature_c" double precision,
	"expected_hatch_on" date,
	"hatched_on" date,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "clutches_status_check" CHECK ("clutches"."status" in ('incubating', 'hatched', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "contacts" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"company" text,
	"kind" text NOT NULL,
	"email" text,
	"phone" text,
	"address_line1" text,
	"city" text,
	"region" text,
	"postal_code" text,
	"country" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contacts_account_id_key" UNIQUE("account_id","id"),
	CONSTRAINT "contacts_kind_check" CHECK ("contacts"."kind" in ('customer', 'supplier', 'veterinarian', 'breeder', 'other'))
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"title" text NOT NULL,
	"kind" text NOT NULL,
	"animal_id" text,
	"contact_id" text,
	"file_name" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"sha256" text,
	"url" text,
	"issued_on" date,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "documents_kind_check" CHECK ("documents"."kind" in ('vet_report', 'permit', 'receipt', 'pedigree', 'photo', 'contract', 'other'))
);
--> statement-breakpoint
CREATE TABLE "environments" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"parent_id" text,
	"location" text,
	"width_cm" double precision,
	"depth_cm" double precision,
	"height_cm" double precision,
	"substrate" text,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "environments_account_id_key" UNIQUE("account_id","id"),
	CONSTRAINT "environments_kind_check" CHECK ("environments"."kind" in ('enclosure', 'rack', 'tub', 'room', 'incubator', 'outdoor'))
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"account_id" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" integer NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_account_id_key_pk" PRIMARY KEY("account_id","key")
);
--> statement-breakpoint
CREATE TABLE "invoices" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"number" text NOT NULL,
	"contact_id" text,
	"status" text NOT NULL,
	"currency" text NOT NULL,
	"issued_on" date NOT NULL,
	"due_on" date,
	"paid_at" timestamp (3) with time zone,
	"line_items" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"subtotal" integer NOT NULL,
	"tax" integer DEFAULT 0 NOT NULL,
	"total" integer NOT NULL,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "invoices_account_number_key" UNIQUE("account_id","number"),
	CONSTRAINT "invoices_status_check" CHECK ("invoices"."status" in ('draft', 'open', 'paid', 'void')),
	CONSTRAINT "invoices_total_check" CHECK ("invoices"."total" = "invoices"."subtotal" + "invoices"."tax")
);
--> statement-breakpoint
CREATE TABLE "medical_conditions" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"animal_id" text NOT NULL,
	"name" text NOT NULL,
	"category" text NOT NULL,
	"severity" text NOT NULL,
	"status" text NOT NULL,
	"diagnosed_on" date NOT NULL,
	"resolved_on" date,
	"veterinarian" text,
	"treatment" text,
	"notes" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "medical_conditions_category_check" CHECK ("medical_conditions"."category" in ('infection', 'parasite', 'injury', 'metabolic', 'respiratory', 'dermatological', 'reproductive', 'other')),
	CONSTRAINT "medical_conditions_severity_check" CHECK ("medical_conditions"."severity" in ('mild', 'moderate', 'severe')),
	CONSTRAINT "medical_conditions_status_check" CHECK ("medical_conditions"."status" in ('active', 'monitoring', 'resolved'))
);
--> statement-breakpoint
CREATE TABLE "outbox_events" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"type" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "activities" ADD CONSTRAINT "activities_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "activities" ADD CONSTRAINT "activities_animal_fk" FOREIGN KEY ("account_id","animal_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "animals" ADD CONSTRAINT "animals_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "animals" ADD CONSTRAINT "animals_environment_fk" FOREIGN KEY ("account_id","environment_id") REFERENCES "public"."environments"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "animals" ADD CONSTRAINT "animals_dam_fk" FOREIGN KEY ("account_id","dam_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "animals" ADD CONSTRAINT "animals_sire_fk" FOREIGN KEY ("account_id","sire_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "breeding_records" ADD CONSTRAINT "breeding_records_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "breeding_records" ADD CONSTRAINT "breeding_records_dam_fk" FOREIGN KEY ("account_id","dam_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "breeding_records" ADD CONSTRAINT "breeding_records_sire_fk" FOREIGN KEY ("account_id","sire_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clutches" ADD CONSTRAINT "clutches_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clutches" ADD CONSTRAINT "clutches_breeding_record_fk" FOREIGN KEY ("account_id","breeding_record_id") REFERENCES "public"."breeding_records"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clutches" ADD CONSTRAINT "clutches_dam_fk" FOREIGN KEY ("account_id","dam_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clutches" ADD CONSTRAINT "clutches_sire_fk" FOREIGN KEY ("account_id","sire_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clutches" ADD CONSTRAINT "clutches_incubator_fk" FOREIGN KEY ("account_id","incubator_id") REFERENCES "public"."environments"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_animal_fk" FOREIGN KEY ("account_id","animal_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_contact_fk" FOREIGN KEY ("account_id","contact_id") REFERENCES "public"."contacts"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_parent_fk" FOREIGN KEY ("account_id","parent_id") REFERENCES "public"."environments"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_contact_fk" FOREIGN KEY ("account_id","contact_id") REFERENCES "public"."contacts"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "medical_conditions" ADD CONSTRAINT "medical_conditions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "medical_conditions" ADD CONSTRAINT "medical_conditions_animal_fk" FOREIGN KEY ("account_id","animal_id") REFERENCES "public"."animals"("account_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outbox_events" ADD CONSTRAINT "outbox_events_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "activities_account_occurred_idx" ON "activities" USING btree ("account_id","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "activities_animal_occurred_idx" ON "activities" USING btree ("account_id","animal_id","occurred_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "activities_account_updated_idx" ON "activities" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "animals_account_species_idx" ON "animals" USING btree ("account_id","species_id") WHERE "animals"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "animals_account_updated_idx" ON "animals" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "breeding_records_account_updated_idx" ON "breeding_records" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "clutches_account_list_idx" ON "clutches" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "clutches_account_updated_idx" ON "clutches" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "contacts_account_updated_idx" ON "contacts" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "documents_account_list_idx" ON "documents" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "documents_account_updated_idx" ON "documents" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "environments_account_updated_idx" ON "environments" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "invoices_account_list_idx" ON "invoices" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "invoices_account_updated_idx" ON "invoices" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "medical_conditions_account_list_idx" ON "medical_conditions" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "medical_conditions_account_updated_idx" ON "medical_conditions" USING btree ("account_id","updated_at");--> statement-breakpoint
CREATE INDEX "outbox_events_account_idx" ON "outbox_events" USING btree ("account_id","id");
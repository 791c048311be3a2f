-- A portable id is a record's identity inside its household, not across the
-- whole installation: a household imported onto a server that already holds
-- the same records (a second household made from the same bundle) keeps
-- their ids, and an import can no longer tell whether another household
-- holds an id. Each table is rebuilt with (household_id, portable_id) unique
-- instead of portable_id alone: SQLite cannot drop a column's UNIQUE. The
-- migration runs with foreign keys off and legacy renames, so references to
-- these tables stay as they are; src/db/migrate.rs checks every foreign key
-- before it commits.
PRAGMA legacy_alter_table = ON;
ALTER TABLE people RENAME TO people_before_0016;
CREATE TABLE people (
    id            INTEGER PRIMARY KEY,
    portable_id   TEXT NOT NULL,
    household_id  INTEGER NOT NULL REFERENCES households (id),
    name          TEXT NOT NULL,
    email         TEXT,
    date_of_birth TEXT,
    person_type   TEXT NOT NULL CHECK (person_type = 'adult' OR person_type = 'minor' OR person_type = 'dependent_adult'),
    has_capacity  INTEGER NOT NULL CHECK (has_capacity IN (0, 1)),
    lock_version  INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;
INSERT INTO people SELECT * FROM people_before_0016;
DROP TABLE people_before_0016;
CREATE UNIQUE INDEX people_by_household_portable_id ON people (household_id, portable_id);
CREATE INDEX people_by_household ON people (household_id, id);
CREATE INDEX people_by_household_updated ON people (household_id, updated_at);
CREATE TRIGGER people_insert_stamps_plan AFTER INSERT ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER people_update_stamps_plan AFTER UPDATE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER people_delete_stamps_plan AFTER DELETE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
ALTER TABLE locations RENAME TO locations_before_0016;
CREATE TABLE locations (
    id           INTEGER PRIMARY KEY,
    portable_id  TEXT NOT NULL,
    household_id INTEGER NOT NULL REFERENCES households (id),
    name         TEXT NOT NULL,
    description  TEXT,
    lock_version INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT
) STRICT;
INSERT INTO locations SELECT * FROM locations_before_0016;
DROP TABLE locations_before_0016;
CREATE UNIQUE INDEX locations_by_household_portable_id ON locations (household_id, portable_id);
CREATE INDEX locations_by_household ON locations (household_id, id);
ALTER TABLE medications RENAME TO medications_before_0016;
CREATE TABLE medications (
    id                    INTEGER PRIMARY KEY,
    portable_id           TEXT NOT NULL,
    household_id          INTEGER NOT NULL REFERENCES households (id),
    location_id           INTEGER REFERENCES locations (id),
    name                  TEXT NOT NULL,
    friendly_name         TEXT,
    category              TEXT,
    description           TEXT,
    dose_amount           TEXT,
    dose_unit             TEXT,
    default_schedule_type TEXT,
    current_supply        TEXT NOT NULL DEFAULT '0',
    reorder_threshold     TEXT,
    barcode               TEXT,
    dmd_code              TEXT,
    dmd_system            TEXT,
    dmd_concept_class     TEXT CHECK (dmd_concept_class IN ('VMP', 'AMP')),
    reorder_status        TEXT CHECK (reorder_status IN ('ordered', 'received')),
    reorder_supplier      TEXT,
    reorder_quantity      TEXT,
    reorder_expected_on   TEXT,
    reorder_ordered_at    TEXT,
    reorder_received_at   TEXT,
    lock_version          INTEGER NOT NULL DEFAULT 1,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    deleted_at            TEXT
) STRICT;
INSERT INTO medications SELECT * FROM medications_before_0016;
DROP TABLE medications_before_0016;
CREATE UNIQUE INDEX medications_by_household_portable_id ON medications (household_id, portable_id);
CREATE INDEX medications_by_household ON medications (household_id, id);
ALTER TABLE dosage_options RENAME TO dosage_options_before_0016;
CREATE TABLE dosage_options (
    id                              INTEGER PRIMARY KEY,
    portable_id                     TEXT NOT NULL,
    household_id                    INTEGER NOT NULL REFERENCES households (id),
    medication_id                   INTEGER NOT NULL REFERENCES medications (id),
    amount                          TEXT NOT NULL,
    unit                            TEXT NOT NULL,
    frequency                       TEXT,
    description                     TEXT,
    default_for_adults              INTEGER NOT NULL DEFAULT 0 CHECK (default_for_adults IN (0, 1)),
    default_for_children            INTEGER NOT NULL DEFAULT 0 CHECK (default_for_children IN (0, 1)),
    default_max_daily_doses         INTEGER,
    default_min_hours_between_doses TEXT,
    default_dose_cycle              TEXT CHECK (default_dose_cycle = 'daily' OR default_dose_cycle = 'weekly' OR default_dose_cycle = 'monthly'),
    current_supply                  TEXT,
    reorder_threshold               TEXT,
    lock_version                    INTEGER NOT NULL DEFAULT 1,
    created_at                      TEXT NOT NULL,
    updated_at                      TEXT NOT NULL
) STRICT;
INSERT INTO dosage_options SELECT * FROM dosage_options_before_0016;
DROP TABLE dosage_options_before_0016;
CREATE UNIQUE INDEX dosage_options_by_household_portable_id ON dosage_options (household_id, portable_id);
CREATE INDEX dosage_options_by_medication ON dosage_options (medication_id, id);
CREATE INDEX dosage_options_by_household ON dosage_options (household_id, id);
ALTER TABLE stock_removals RENAME TO stock_removals_before_0016;
CREATE TABLE stock_removals (
    id                  INTEGER PRIMARY KEY,
    portable_id         TEXT NOT NULL,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    medication_id       INTEGER NOT NULL REFERENCES medications (id),
    dosage_option_id    INTEGER REFERENCES dosage_options (id),
    quantity            TEXT NOT NULL,
    reason              TEXT NOT NULL,
    note                TEXT,
    submission_id       TEXT NOT NULL,
    supply_before       TEXT NOT NULL,
    supply_after        TEXT NOT NULL,
    actor_membership_id INTEGER REFERENCES memberships (id),
    created_at          TEXT NOT NULL,
    UNIQUE (medication_id, submission_id)
) STRICT;
INSERT INTO stock_removals SELECT * FROM stock_removals_before_0016;
DROP TABLE stock_removals_before_0016;
CREATE UNIQUE INDEX stock_removals_by_household_portable_id ON stock_removals (household_id, portable_id);
CREATE INDEX stock_removals_by_medication ON stock_removals (medication_id, id);
ALTER TABLE health_events RENAME TO health_events_before_0016;
CREATE TABLE health_events (
    id           INTEGER PRIMARY KEY,
    portable_id  TEXT NOT NULL,
    household_id INTEGER NOT NULL REFERENCES households (id),
    person_id    INTEGER NOT NULL REFERENCES people (id),
    event_kind   TEXT NOT NULL CHECK (event_kind IN ('illness', 'suspected_side_effect')),
    severity     TEXT CHECK (severity = 'mild' OR severity = 'moderate' OR severity = 'severe'),
    title        TEXT NOT NULL,
    notes        TEXT,
    started_on   TEXT NOT NULL,
    ended_on     TEXT CHECK (ended_on IS NULL OR ended_on >= started_on),
    lock_version INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT
) STRICT;
INSERT INTO health_events SELECT * FROM health_events_before_0016;
DROP TABLE health_events_before_0016;
CREATE UNIQUE INDEX health_events_by_household_portable_id ON health_events (household_id, portable_id);
CREATE INDEX health_events_by_household ON health_events (household_id, started_on);
CREATE INDEX health_events_by_person ON health_events (person_id, started_on);
ALTER TABLE notification_preferences RENAME TO notification_preferences_before_0016;
CREATE TABLE notification_preferences (
    id                   INTEGER PRIMARY KEY,
    portable_id          TEXT NOT NULL,
    household_id         INTEGER NOT NULL REFERENCES households (id),
    person_id            INTEGER NOT NULL UNIQUE REFERENCES people (id),
    enabled              INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    dose_due_enabled     INTEGER NOT NULL CHECK (dose_due_enabled IN (0, 1)),
    missed_dose_enabled  INTEGER NOT NULL CHECK (missed_dose_enabled IN (0, 1)),
    low_stock_enabled    INTEGER NOT NULL CHECK (low_stock_enabled IN (0, 1)),
    private_text_enabled INTEGER NOT NULL CHECK (private_text_enabled IN (0, 1)),
    morning_time         TEXT,
    afternoon_time       TEXT,
    evening_time         TEXT,
    night_time           TEXT,
    lock_version         INTEGER NOT NULL DEFAULT 1,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL
) STRICT;
INSERT INTO notification_preferences SELECT * FROM notification_preferences_before_0016;
DROP TABLE notification_preferences_before_0016;
CREATE UNIQUE INDEX notification_preferences_by_household_portable_id ON notification_preferences (household_id, portable_id);
CREATE INDEX notification_preferences_by_household ON notification_preferences (household_id, id);
ALTER TABLE schedules RENAME TO schedules_before_0016;
CREATE TABLE schedules (
    id                      INTEGER PRIMARY KEY,
    portable_id             TEXT NOT NULL,
    household_id            INTEGER NOT NULL REFERENCES households (id),
    person_id               INTEGER NOT NULL REFERENCES people (id),
    medication_id           INTEGER NOT NULL REFERENCES medications (id),
    source_dosage_option_id INTEGER REFERENCES dosage_options (id),
    dose_amount             TEXT NOT NULL,
    dose_unit               TEXT NOT NULL,
    frequency               TEXT,
    dose_cycle              TEXT CHECK (dose_cycle = 'daily' OR dose_cycle = 'weekly' OR dose_cycle = 'monthly'),
    max_daily_doses         INTEGER CHECK (max_daily_doses >= 1),
    min_hours_between_doses TEXT,
    schedule_type           TEXT NOT NULL,
    schedule_config         TEXT NOT NULL DEFAULT '{}',
    start_date              TEXT NOT NULL,
    end_date                TEXT CHECK (end_date IS NULL OR end_date >= start_date),
    active                  INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    notes                   TEXT,
    lock_version            INTEGER NOT NULL DEFAULT 1,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL,
    retired_at              TEXT
) STRICT;
INSERT INTO schedules SELECT * FROM schedules_before_0016;
DROP TABLE schedules_before_0016;
CREATE UNIQUE INDEX schedules_by_household_portable_id ON schedules (household_id, portable_id);
CREATE INDEX schedules_by_household ON schedules (household_id, id);
CREATE INDEX schedules_by_person ON schedules (person_id, id);
CREATE INDEX schedules_by_person_medication ON schedules (person_id, medication_id);
CREATE INDEX schedules_by_medication ON schedules (medication_id) WHERE retired_at IS NULL;
CREATE TRIGGER schedules_insert_stamps_plan AFTER INSERT ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER schedules_update_stamps_plan AFTER UPDATE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER schedules_delete_stamps_plan AFTER DELETE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
ALTER TABLE person_medications RENAME TO person_medications_before_0016;
CREATE TABLE person_medications (
    id                      INTEGER PRIMARY KEY,
    portable_id             TEXT NOT NULL,
    household_id            INTEGER NOT NULL REFERENCES households (id),
    person_id               INTEGER NOT NULL REFERENCES people (id),
    medication_id           INTEGER NOT NULL REFERENCES medications (id),
    source_dosage_option_id INTEGER REFERENCES dosage_options (id),
    dose_amount             TEXT NOT NULL,
    dose_unit               TEXT NOT NULL,
    dose_cycle              TEXT CHECK (dose_cycle = 'daily' OR dose_cycle = 'weekly' OR dose_cycle = 'monthly'),
    max_daily_doses         INTEGER CHECK (max_daily_doses >= 1),
    min_hours_between_doses TEXT,
    administration_kind     TEXT NOT NULL DEFAULT 'routine' CHECK (administration_kind IN ('routine', 'as_needed')),
    active                  INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    notes                   TEXT,
    position                INTEGER NOT NULL,
    lock_version            INTEGER NOT NULL DEFAULT 1,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL,
    retired_at              TEXT
) STRICT;
INSERT INTO person_medications SELECT * FROM person_medications_before_0016;
DROP TABLE person_medications_before_0016;
CREATE UNIQUE INDEX person_medications_by_household_portable_id ON person_medications (household_id, portable_id);
CREATE UNIQUE INDEX person_medications_position ON person_medications (person_id, position);
CREATE INDEX person_medications_by_household ON person_medications (household_id, person_id, position);
CREATE INDEX person_medications_by_person_medication
    ON person_medications (person_id, medication_id);
CREATE INDEX person_medications_by_medication ON person_medications (medication_id) WHERE retired_at IS NULL;
CREATE TRIGGER person_medications_insert_stamps_plan AFTER INSERT ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER person_medications_update_stamps_plan AFTER UPDATE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER person_medications_delete_stamps_plan AFTER DELETE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
ALTER TABLE medication_pause_periods RENAME TO medication_pause_periods_before_0016;
CREATE TABLE medication_pause_periods (
    id                        INTEGER PRIMARY KEY,
    portable_id               TEXT NOT NULL,
    household_id              INTEGER NOT NULL REFERENCES households (id),
    source_type               TEXT NOT NULL CHECK (source_type IN ('schedule', 'person_medication')),
    source_id                 INTEGER NOT NULL,
    person_id                 INTEGER NOT NULL REFERENCES people (id),
    reason                    TEXT NOT NULL CHECK (reason = 'clinician_advice' OR reason = 'side_effects' OR reason = 'out_of_supply' OR reason = 'other' OR reason = 'reason_not_recorded'),
    note                      TEXT,
    started_at                TEXT,
    ended_at                  TEXT,
    legacy_context            INTEGER NOT NULL DEFAULT 0 CHECK (legacy_context IN (0, 1)),
    imported_context          INTEGER NOT NULL DEFAULT 0 CHECK (imported_context IN (0, 1)),
    recorded_by_membership_id INTEGER REFERENCES memberships (id),
    resumed_by_membership_id  INTEGER REFERENCES memberships (id),
    lock_version              INTEGER NOT NULL DEFAULT 1,
    created_at                TEXT NOT NULL,
    updated_at                TEXT NOT NULL
) STRICT;
INSERT INTO medication_pause_periods SELECT * FROM medication_pause_periods_before_0016;
DROP TABLE medication_pause_periods_before_0016;
CREATE UNIQUE INDEX medication_pause_periods_by_household_portable_id ON medication_pause_periods (household_id, portable_id);
CREATE UNIQUE INDEX medication_pause_periods_one_open ON medication_pause_periods (source_type, source_id) WHERE ended_at IS NULL;
CREATE INDEX medication_pause_periods_by_source ON medication_pause_periods (source_type, source_id, id);
CREATE INDEX medication_pause_periods_by_household ON medication_pause_periods (household_id, id);
CREATE TRIGGER medication_pause_periods_insert_stamps_plan AFTER INSERT ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER medication_pause_periods_update_stamps_plan AFTER UPDATE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER medication_pause_periods_delete_stamps_plan AFTER DELETE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
ALTER TABLE medication_takes RENAME TO medication_takes_before_0016;
CREATE TABLE medication_takes (
    id                          INTEGER PRIMARY KEY,
    portable_id                 TEXT NOT NULL,
    household_id                INTEGER NOT NULL REFERENCES households (id),
    person_id                   INTEGER NOT NULL REFERENCES people (id),
    source_type                 TEXT NOT NULL CHECK (source_type IN ('schedule', 'person_medication')),
    source_id                   INTEGER NOT NULL,
    client_uuid                 TEXT,
    taken_at                    TEXT NOT NULL,
    dose_amount                 TEXT NOT NULL,
    dose_unit                   TEXT NOT NULL,
    taken_from_medication_id    INTEGER REFERENCES medications (id),
    taken_from_location_id      INTEGER REFERENCES locations (id),
    occurrence_key              TEXT,
    occurrence_window_starts_on TEXT,
    occurrence_position         INTEGER,
    recorded_by_membership_id   INTEGER REFERENCES memberships (id),
    lock_version                INTEGER NOT NULL DEFAULT 1,
    created_at                  TEXT NOT NULL,
    updated_at                  TEXT NOT NULL,
    UNIQUE (household_id, client_uuid),
    CHECK ((occurrence_position IS NULL) = (occurrence_window_starts_on IS NULL))
) STRICT;
INSERT INTO medication_takes SELECT * FROM medication_takes_before_0016;
DROP TABLE medication_takes_before_0016;
CREATE UNIQUE INDEX medication_takes_by_household_portable_id ON medication_takes (household_id, portable_id);
CREATE INDEX medication_takes_by_source ON medication_takes (source_type, source_id, taken_at);
CREATE INDEX medication_takes_by_person ON medication_takes (person_id, taken_at);
CREATE INDEX medication_takes_by_household ON medication_takes (household_id, taken_at);
CREATE UNIQUE INDEX medication_takes_occurrence
    ON medication_takes (source_type, source_id, occurrence_window_starts_on, occurrence_position)
    WHERE occurrence_position IS NOT NULL;
ALTER TABLE dose_occurrences RENAME TO dose_occurrences_before_0016;
CREATE TABLE dose_occurrences (
    id                  INTEGER PRIMARY KEY,
    portable_id         TEXT NOT NULL,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    person_id           INTEGER NOT NULL REFERENCES people (id),
    source_type         TEXT NOT NULL CHECK (source_type IN ('schedule', 'person_medication')),
    source_id           INTEGER NOT NULL,
    window_starts_on    TEXT NOT NULL,
    window_ends_on      TEXT NOT NULL CHECK (window_ends_on >= window_starts_on),
    position            INTEGER NOT NULL CHECK (position >= 1),
    scheduled_at        TEXT,
    outcome             TEXT NOT NULL CHECK (outcome = 'not_taken' OR outcome = 'taken' OR outcome = 'open'),
    reason              TEXT,
    note                TEXT,
    resolved_at         TEXT,
    medication_take_id  INTEGER REFERENCES medication_takes (id),
    actor_membership_id INTEGER REFERENCES memberships (id),
    lock_version        INTEGER NOT NULL DEFAULT 1,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (source_type, source_id, window_starts_on, position)
) STRICT;
INSERT INTO dose_occurrences SELECT * FROM dose_occurrences_before_0016;
DROP TABLE dose_occurrences_before_0016;
CREATE UNIQUE INDEX dose_occurrences_by_household_portable_id ON dose_occurrences (household_id, portable_id);
CREATE INDEX dose_occurrences_by_person ON dose_occurrences (person_id, window_starts_on);
CREATE INDEX dose_occurrences_by_household ON dose_occurrences (household_id, updated_at);
ALTER TABLE medication_review_prompts RENAME TO medication_review_prompts_before_0016;
CREATE TABLE medication_review_prompts (
    id                        INTEGER PRIMARY KEY,
    portable_id               TEXT NOT NULL,
    household_id              INTEGER NOT NULL REFERENCES households (id),
    person_id                 INTEGER NOT NULL REFERENCES people (id),
    medication_id             INTEGER NOT NULL REFERENCES medications (id),
    other_medication_id       INTEGER NOT NULL REFERENCES medications (id),
    evidence_id               INTEGER NOT NULL REFERENCES review_evidence (id),
    evidence                  TEXT NOT NULL,
    priority                  TEXT NOT NULL CHECK (priority = 'low' OR priority = 'medium' OR priority = 'high'),
    review_status             TEXT NOT NULL DEFAULT 'pending' CHECK (review_status = 'pending' OR review_status = 'hidden' OR review_status = 'acknowledged' OR review_status = 'practitioner_reviewed' OR review_status = 'practitioner_changed'),
    practitioner_name         TEXT,
    practitioner_role         TEXT,
    reviewed_on               TEXT,
    notes                     TEXT,
    reviewed_by_membership_id INTEGER REFERENCES memberships (id),
    lock_version              INTEGER NOT NULL DEFAULT 1,
    created_at                TEXT NOT NULL,
    updated_at                TEXT NOT NULL,
    CHECK (medication_id <> other_medication_id)
) STRICT;
INSERT INTO medication_review_prompts SELECT * FROM medication_review_prompts_before_0016;
DROP TABLE medication_review_prompts_before_0016;
CREATE UNIQUE INDEX medication_review_prompts_by_household_portable_id ON medication_review_prompts (household_id, portable_id);
CREATE UNIQUE INDEX medication_review_prompts_once ON medication_review_prompts
    (person_id, min(medication_id, other_medication_id), max(medication_id, other_medication_id), evidence_id);
CREATE INDEX medication_review_prompts_by_household ON medication_review_prompts (household_id, id);
PRAGMA legacy_alter_table = OFF;

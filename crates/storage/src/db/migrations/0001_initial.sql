-- Pillbox schema: the current shape of the database.
-- Timestamps are RFC 3339 UTC text with six fraction digits (they sort as text);
-- dates are ISO 'YYYY-MM-DD'; decimals are TEXT; booleans are 0/1.

-- Facts about this installation (instance id, generated server secrets).
CREATE TABLE instance_settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE accounts (
    id            INTEGER PRIMARY KEY,
    email         TEXT NOT NULL COLLATE NOCASE UNIQUE,
    display_name  TEXT,
    password_hash TEXT NOT NULL,
    -- Profile preferences of the account (the person holds date of birth).
    time_zone        TEXT,
    gravatar_enabled INTEGER NOT NULL DEFAULT 0 CHECK (gravatar_enabled IN (0, 1)),
    mobile_shortcuts TEXT NOT NULL DEFAULT '[]',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

CREATE TABLE households (
    id                     INTEGER PRIMARY KEY,
    portable_id            TEXT NOT NULL UNIQUE,
    name                   TEXT NOT NULL,
    time_zone              TEXT NOT NULL,
    app_token_max_age_days INTEGER NOT NULL DEFAULT 90,
    lock_version           INTEGER NOT NULL DEFAULT 1,
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL
) STRICT;

CREATE TABLE people (
    id            INTEGER PRIMARY KEY,
    portable_id   TEXT NOT NULL UNIQUE,
    household_id  INTEGER NOT NULL REFERENCES households (id),
    name          TEXT NOT NULL,
    email         TEXT,
    date_of_birth TEXT,
    person_type   TEXT NOT NULL CHECK (person_type IN ('adult', 'minor', 'dependent_adult')),
    has_capacity  INTEGER NOT NULL CHECK (has_capacity IN (0, 1)),
    lock_version  INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;
CREATE INDEX people_by_household ON people (household_id, id);
CREATE INDEX people_by_household_updated ON people (household_id, updated_at);

CREATE TABLE memberships (
    id                   INTEGER PRIMARY KEY,
    household_id         INTEGER NOT NULL REFERENCES households (id),
    account_id           INTEGER NOT NULL REFERENCES accounts (id),
    person_id            INTEGER REFERENCES people (id),
    role                 TEXT NOT NULL CHECK (role IN ('owner', 'administrator', 'member')),
    status               TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'revoked')),
    inventory_management INTEGER NOT NULL DEFAULT 0 CHECK (inventory_management IN (0, 1)),
    location_management  INTEGER NOT NULL DEFAULT 0 CHECK (location_management IN (0, 1)),
    adult_review         INTEGER NOT NULL DEFAULT 0 CHECK (adult_review IN (0, 1)),
    -- Moves on with every change to this membership's access.
    permissions_version  INTEGER NOT NULL DEFAULT 1,
    lock_version         INTEGER NOT NULL DEFAULT 1,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    UNIQUE (household_id, account_id)
) STRICT;
CREATE INDEX memberships_by_account ON memberships (account_id);

CREATE TABLE person_access_grants (
    id                       INTEGER PRIMARY KEY,
    household_id             INTEGER NOT NULL REFERENCES households (id),
    membership_id            INTEGER NOT NULL REFERENCES memberships (id),
    person_id                INTEGER NOT NULL REFERENCES people (id),
    access_level             TEXT NOT NULL CHECK (access_level IN ('view', 'record', 'manage')),
    relationship_type        TEXT NOT NULL CHECK (relationship_type IN ('self', 'parent', 'family_member', 'carer', 'professional')),
    expires_at               TEXT,
    created_by_membership_id INTEGER REFERENCES memberships (id),
    created_at               TEXT NOT NULL,
    revoked_at               TEXT
) STRICT;
-- At most one live grant per member and person.
CREATE UNIQUE INDEX person_access_grants_live ON person_access_grants (membership_id, person_id) WHERE revoked_at IS NULL;
CREATE INDEX person_access_grants_by_household ON person_access_grants (household_id, id);

-- Household app tokens: only a SHA-256 digest of the secret is kept.
CREATE TABLE app_tokens (
    id                       INTEGER PRIMARY KEY,
    household_id             INTEGER NOT NULL REFERENCES households (id),
    membership_id            INTEGER NOT NULL REFERENCES memberships (id),
    name                     TEXT NOT NULL,
    selector                 TEXT NOT NULL UNIQUE,
    secret_sha256            BLOB NOT NULL,
    created_by_membership_id INTEGER REFERENCES memberships (id),
    created_at               TEXT NOT NULL,
    expires_at               TEXT NOT NULL,
    last_used_at             TEXT,
    revoked_at               TEXT
) STRICT;
CREATE INDEX app_tokens_by_household ON app_tokens (household_id, id);

CREATE TABLE locations (
    id           INTEGER PRIMARY KEY,
    portable_id  TEXT NOT NULL UNIQUE,
    household_id INTEGER NOT NULL REFERENCES households (id),
    name         TEXT NOT NULL,
    description  TEXT,
    lock_version INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT
) STRICT;
CREATE INDEX locations_by_household ON locations (household_id, id);

CREATE TABLE location_memberships (
    id           INTEGER PRIMARY KEY,
    household_id INTEGER NOT NULL REFERENCES households (id),
    location_id  INTEGER NOT NULL REFERENCES locations (id),
    person_id    INTEGER NOT NULL REFERENCES people (id),
    created_at   TEXT NOT NULL,
    UNIQUE (location_id, person_id)
) STRICT;
CREATE INDEX location_memberships_by_person ON location_memberships (person_id);

-- Security and stock audit trail, listed by the audit-log endpoint.
CREATE TABLE audit_events (
    id                  INTEGER PRIMARY KEY,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    event_type          TEXT NOT NULL,
    actor_membership_id INTEGER REFERENCES memberships (id),
    subject_type        TEXT NOT NULL,
    subject_id          INTEGER,
    -- JSON object; never holds secrets or clinical values.
    metadata            TEXT NOT NULL DEFAULT '{}',
    occurred_at         TEXT NOT NULL
) STRICT;
CREATE INDEX audit_events_by_household ON audit_events (household_id, id);

-- The change feed: appended in the same transaction as the write it
-- describes, so a rolled-back write leaves no entry. seq is the cursor.
CREATE TABLE change_feed (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    record_type         TEXT NOT NULL,
    record_id           INTEGER NOT NULL,
    record_portable_id  TEXT NOT NULL,
    action              TEXT NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    -- The person whose access governs who may see this entry (NULL: household-wide).
    person_id           INTEGER,
    occurred_at         TEXT NOT NULL
) STRICT;
CREATE INDEX change_feed_by_household ON change_feed (household_id, seq);

-- Medicines of the household. Decimals (doses, stock) are exact TEXT.
CREATE TABLE medications (
    id                    INTEGER PRIMARY KEY,
    portable_id           TEXT NOT NULL UNIQUE,
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
CREATE INDEX medications_by_household ON medications (household_id, id);

-- Ways a medication is taken, with defaults a schedule can start from.
-- current_supply is NULL unless this option keeps its own stock.
CREATE TABLE dosage_options (
    id                              INTEGER PRIMARY KEY,
    portable_id                     TEXT NOT NULL UNIQUE,
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
    default_dose_cycle              TEXT CHECK (default_dose_cycle IN ('daily', 'weekly', 'monthly')),
    current_supply                  TEXT,
    reorder_threshold               TEXT,
    lock_version                    INTEGER NOT NULL DEFAULT 1,
    created_at                      TEXT NOT NULL,
    updated_at                      TEXT NOT NULL
) STRICT;
CREATE INDEX dosage_options_by_medication ON dosage_options (medication_id, id);
CREATE INDEX dosage_options_by_household ON dosage_options (household_id, id);

-- Stock that left other than as a dose. submission_id makes a retry safe.
CREATE TABLE stock_removals (
    id                  INTEGER PRIMARY KEY,
    portable_id         TEXT NOT NULL UNIQUE,
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
CREATE INDEX stock_removals_by_medication ON stock_removals (medication_id, id);

-- Profile pictures live in the database so backups carry them.
CREATE TABLE avatars (
    person_id    INTEGER PRIMARY KEY REFERENCES people (id),
    content_type TEXT NOT NULL,
    data         BLOB NOT NULL,
    updated_at   TEXT NOT NULL
) STRICT;

-- Illnesses and suspected side effects of a person. A deleted event keeps its
-- row (deleted_at set): it is the tombstone the change feed points at.
CREATE TABLE health_events (
    id           INTEGER PRIMARY KEY,
    portable_id  TEXT NOT NULL UNIQUE,
    household_id INTEGER NOT NULL REFERENCES households (id),
    person_id    INTEGER NOT NULL REFERENCES people (id),
    event_kind   TEXT NOT NULL CHECK (event_kind IN ('illness', 'suspected_side_effect')),
    severity     TEXT CHECK (severity IN ('mild', 'moderate', 'severe')),
    title        TEXT NOT NULL,
    notes        TEXT,
    started_on   TEXT NOT NULL,
    ended_on     TEXT CHECK (ended_on IS NULL OR ended_on >= started_on),
    lock_version INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT
) STRICT;
CREATE INDEX health_events_by_household ON health_events (household_id, started_on);
CREATE INDEX health_events_by_person ON health_events (person_id, started_on);

-- Medications a health event names (e.g. the suspected cause of a side effect).
CREATE TABLE health_event_medications (
    health_event_id INTEGER NOT NULL REFERENCES health_events (id),
    medication_id   INTEGER NOT NULL REFERENCES medications (id),
    PRIMARY KEY (health_event_id, medication_id)
) STRICT, WITHOUT ROWID;

-- A person's notification preferences: at most one row per person, written on
-- the first change (until then reads answer the defaults). Slot times are
-- 'HH:MM:SS' or NULL and feed the morning/afternoon/evening/night schedule slots.
CREATE TABLE notification_preferences (
    id                   INTEGER PRIMARY KEY,
    portable_id          TEXT NOT NULL UNIQUE,
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
CREATE INDEX notification_preferences_by_household ON notification_preferences (household_id, id);

-- When a person takes a medication. A retired (deleted) schedule keeps its
-- row for the takes, outcomes and pause history that point at it.
-- schedule_config is the normalised JSON of a config checked against
-- schedule_type (src/care/schedule_config.rs). active is 0 while paused.
CREATE TABLE schedules (
    id                      INTEGER PRIMARY KEY,
    portable_id             TEXT NOT NULL UNIQUE,
    household_id            INTEGER NOT NULL REFERENCES households (id),
    person_id               INTEGER NOT NULL REFERENCES people (id),
    medication_id           INTEGER NOT NULL REFERENCES medications (id),
    source_dosage_option_id INTEGER REFERENCES dosage_options (id),
    dose_amount             TEXT NOT NULL,
    dose_unit               TEXT NOT NULL,
    frequency               TEXT,
    dose_cycle              TEXT CHECK (dose_cycle IN ('daily', 'weekly', 'monthly')),
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
CREATE INDEX schedules_by_household ON schedules (household_id, id);
CREATE INDEX schedules_by_person ON schedules (person_id, id);
CREATE INDEX schedules_by_medication ON schedules (medication_id) WHERE retired_at IS NULL;

-- Medications assigned directly to a person (routine or as needed). Retired
-- rows stay, as for schedules, and keep their position: positions are unique
-- per person and never reused.
CREATE TABLE person_medications (
    id                      INTEGER PRIMARY KEY,
    portable_id             TEXT NOT NULL UNIQUE,
    household_id            INTEGER NOT NULL REFERENCES households (id),
    person_id               INTEGER NOT NULL REFERENCES people (id),
    medication_id           INTEGER NOT NULL REFERENCES medications (id),
    source_dosage_option_id INTEGER REFERENCES dosage_options (id),
    dose_amount             TEXT NOT NULL,
    dose_unit               TEXT NOT NULL,
    dose_cycle              TEXT CHECK (dose_cycle IN ('daily', 'weekly', 'monthly')),
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
CREATE UNIQUE INDEX person_medications_position ON person_medications (person_id, position);
CREATE INDEX person_medications_by_household ON person_medications (household_id, person_id, position);
CREATE INDEX person_medications_by_medication ON person_medications (medication_id) WHERE retired_at IS NULL;

-- Saved responses of writes sent with an Idempotency-Key (src/db/idempotency.rs):
-- an identical replay within 24 hours gets the saved status, body and ETag
-- without the write running again. fingerprint is the SHA-256 (hex) of the
-- method, path and body. credential names whose key it is: the acting member
-- ('membership:7'), not the token, so that a client that re-authenticates
-- (a new token) and replays its saved batch with the original key gets the
-- saved response instead of a second write. Rows older than the window are
-- ignored and purged.
CREATE TABLE idempotency_keys (
    id           INTEGER PRIMARY KEY,
    household_id INTEGER NOT NULL REFERENCES households (id),
    credential   TEXT NOT NULL,
    key          TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status       INTEGER NOT NULL,
    body         TEXT NOT NULL,
    etag         TEXT,
    created_at   TEXT NOT NULL,
    UNIQUE (household_id, credential, key)
) STRICT;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

-- Pause periods of schedules and direct assignments. Periods are never
-- edited or deleted: a pause opens one, a resume closes it (ended_at). A
-- legacy period may have an unknown start (started_at NULL). At most one
-- period per source is open at a time.
CREATE TABLE medication_pause_periods (
    id                        INTEGER PRIMARY KEY,
    portable_id               TEXT NOT NULL UNIQUE,
    household_id              INTEGER NOT NULL REFERENCES households (id),
    source_type               TEXT NOT NULL CHECK (source_type IN ('schedule', 'person_medication')),
    source_id                 INTEGER NOT NULL,
    person_id                 INTEGER NOT NULL REFERENCES people (id),
    reason                    TEXT NOT NULL CHECK (reason IN ('clinician_advice', 'side_effects', 'out_of_supply', 'other', 'reason_not_recorded')),
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
CREATE UNIQUE INDEX medication_pause_periods_one_open ON medication_pause_periods (source_type, source_id) WHERE ended_at IS NULL;
CREATE INDEX medication_pause_periods_by_source ON medication_pause_periods (source_type, source_id, id);
CREATE INDEX medication_pause_periods_by_household ON medication_pause_periods (household_id, id);

-- Doses actually given. Immutable: no update or delete. dose_amount and
-- dose_unit are the take's own (changing a schedule later never rewrites
-- them). client_uuid makes a retried recording safe. An expected dose
-- (source, window, position) is linked to at most one take.
CREATE TABLE medication_takes (
    id                          INTEGER PRIMARY KEY,
    portable_id                 TEXT NOT NULL UNIQUE,
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
CREATE INDEX medication_takes_by_source ON medication_takes (source_type, source_id, taken_at);
CREATE INDEX medication_takes_by_person ON medication_takes (person_id, taken_at);
CREATE INDEX medication_takes_by_household ON medication_takes (household_id, taken_at);
CREATE UNIQUE INDEX medication_takes_occurrence
    ON medication_takes (source_type, source_id, occurrence_window_starts_on, occurrence_position)
    WHERE occurrence_position IS NOT NULL;

-- Saved outcomes of expected doses (portable v2 "Dose occurrence"). Only
-- decisions are stored (not_taken, or open again); the expected-dose
-- projection (listDoseOccurrences, src/care/dose_occurrences/) reads them and
-- never writes here. An occurrence is its source, window and position; the
-- saved window end survives later dose-cycle changes. medication_take_id
-- names the medication_takes row of a taken dose.
CREATE TABLE dose_occurrences (
    id                  INTEGER PRIMARY KEY,
    portable_id         TEXT NOT NULL UNIQUE,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    person_id           INTEGER NOT NULL REFERENCES people (id),
    source_type         TEXT NOT NULL CHECK (source_type IN ('schedule', 'person_medication')),
    source_id           INTEGER NOT NULL,
    window_starts_on    TEXT NOT NULL,
    window_ends_on      TEXT NOT NULL CHECK (window_ends_on >= window_starts_on),
    position            INTEGER NOT NULL CHECK (position >= 1),
    scheduled_at        TEXT,
    outcome             TEXT NOT NULL CHECK (outcome IN ('not_taken', 'taken', 'open')),
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
CREATE INDEX dose_occurrences_by_person ON dose_occurrences (person_id, window_starts_on);
CREATE INDEX dose_occurrences_by_household ON dose_occurrences (household_id, updated_at);

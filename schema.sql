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
CREATE UNIQUE INDEX people_by_household_portable_id ON people (household_id, portable_id);
CREATE INDEX people_by_household ON people (household_id, id);
CREATE INDEX people_by_household_updated ON people (household_id, updated_at);

CREATE TABLE memberships (
    id                   INTEGER PRIMARY KEY,
    household_id         INTEGER NOT NULL REFERENCES households (id),
    account_id           INTEGER NOT NULL REFERENCES accounts (id),
    person_id            INTEGER REFERENCES people (id),
    role                 TEXT NOT NULL CHECK (role = 'owner' OR role = 'administrator' OR role = 'member'),
    status               TEXT NOT NULL DEFAULT 'active' CHECK (status = 'active' OR status = 'suspended' OR status = 'revoked'),
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
    access_level             TEXT NOT NULL CHECK (access_level = 'view' OR access_level = 'record' OR access_level = 'manage'),
    relationship_type        TEXT NOT NULL CHECK (relationship_type = 'self' OR relationship_type = 'parent' OR relationship_type = 'family_member' OR relationship_type = 'carer' OR relationship_type = 'professional'),
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
    portable_id  TEXT NOT NULL,
    household_id INTEGER NOT NULL REFERENCES households (id),
    name         TEXT NOT NULL,
    description  TEXT,
    lock_version INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT
) STRICT;
CREATE UNIQUE INDEX locations_by_household_portable_id ON locations (household_id, portable_id);
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
-- describes, so a rolled-back write leaves no entry. seq is the cursor:
-- entries are never deleted, so each new one takes the largest seq + 1.
CREATE TABLE change_feed (
    seq                 INTEGER PRIMARY KEY,
    household_id        INTEGER NOT NULL REFERENCES households (id),
    record_type         TEXT NOT NULL,
    record_id           INTEGER NOT NULL,
    record_portable_id  TEXT NOT NULL,
    action              TEXT NOT NULL CHECK (action = 'create' OR action = 'update' OR action = 'delete'),
    -- The person whose access governs who may see this entry (NULL: household-wide).
    person_id           INTEGER,
    occurred_at         TEXT NOT NULL
) STRICT;
CREATE INDEX change_feed_by_household ON change_feed (household_id, seq);

-- Medicines of the household. Decimals (doses, stock) are exact TEXT.
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
CREATE UNIQUE INDEX medications_by_household_portable_id ON medications (household_id, portable_id);
CREATE INDEX medications_by_household ON medications (household_id, id);

-- Ways a medication is taken, with defaults a schedule can start from.
-- current_supply is NULL unless this option keeps its own stock.
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
CREATE UNIQUE INDEX dosage_options_by_household_portable_id ON dosage_options (household_id, portable_id);
CREATE INDEX dosage_options_by_medication ON dosage_options (medication_id, id);
CREATE INDEX dosage_options_by_household ON dosage_options (household_id, id);

-- Stock that left other than as a dose. submission_id makes a retry safe.
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
CREATE UNIQUE INDEX stock_removals_by_household_portable_id ON stock_removals (household_id, portable_id);
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
CREATE UNIQUE INDEX health_events_by_household_portable_id ON health_events (household_id, portable_id);
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
CREATE UNIQUE INDEX notification_preferences_by_household_portable_id ON notification_preferences (household_id, portable_id);
CREATE INDEX notification_preferences_by_household ON notification_preferences (household_id, id);

-- When a person takes a medication. A retired (deleted) schedule keeps its
-- row for the takes, outcomes and pause history that point at it.
-- schedule_config is the normalised JSON of a config checked against
-- schedule_type (src/care/schedule_config.rs). active is 0 while paused.
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
CREATE UNIQUE INDEX schedules_by_household_portable_id ON schedules (household_id, portable_id);
CREATE INDEX schedules_by_household ON schedules (household_id, id);
CREATE INDEX schedules_by_person ON schedules (person_id, id);
CREATE INDEX schedules_by_person_medication ON schedules (person_id, medication_id);
CREATE INDEX schedules_by_medication ON schedules (medication_id) WHERE retired_at IS NULL;

-- Medications assigned directly to a person (routine or as needed). Retired
-- rows stay, as for schedules, and keep their position: positions are unique
-- per person and never reused.
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
CREATE UNIQUE INDEX person_medications_by_household_portable_id ON person_medications (household_id, portable_id);
CREATE UNIQUE INDEX person_medications_position ON person_medications (person_id, position);
CREATE INDEX person_medications_by_household ON person_medications (household_id, person_id, position);
CREATE INDEX person_medications_by_person_medication
    ON person_medications (person_id, medication_id);
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
CREATE UNIQUE INDEX medication_pause_periods_by_household_portable_id ON medication_pause_periods (household_id, portable_id);
CREATE UNIQUE INDEX medication_pause_periods_one_open ON medication_pause_periods (source_type, source_id) WHERE ended_at IS NULL;
CREATE INDEX medication_pause_periods_by_source ON medication_pause_periods (source_type, source_id, id);
CREATE INDEX medication_pause_periods_by_household ON medication_pause_periods (household_id, id);

-- The original actors of an imported pause period, kept as the bundle's
-- portable person references when no single membership of the household
-- matches them (import rule 8): the period still says who paused it and
-- who resumed it, while its membership columns stay null (unavailable).
CREATE TABLE IF NOT EXISTS medication_pause_period_actor_refs (
    pause_period_id        INTEGER PRIMARY KEY REFERENCES medication_pause_periods (id),
    recorded_by_person_ref TEXT,
    resumed_by_person_ref  TEXT
) STRICT;

-- Doses actually given. Immutable: no update or delete. dose_amount and
-- dose_unit are the take's own (changing a schedule later never rewrites
-- them). client_uuid makes a retried recording safe. An expected dose
-- (source, window, position) is linked to at most one take.
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
CREATE UNIQUE INDEX medication_takes_by_household_portable_id ON medication_takes (household_id, portable_id);
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
CREATE UNIQUE INDEX dose_occurrences_by_household_portable_id ON dose_occurrences (household_id, portable_id);
CREATE INDEX dose_occurrences_by_person ON dose_occurrences (person_id, window_starts_on);
CREATE INDEX dose_occurrences_by_household ON dose_occurrences (household_id, updated_at);

-- Plan history (src/care/dose_occurrences/history.rs): what the expected-dose
-- projection depends on, as it was from each change on, so a plan change never
-- rewrites past doses. subject_type names what changed: a schedule's or a
-- direct assignment's plan (subject_id: its id), a person's slot times
-- (the person's id) or the household time zone (the household's id). state
-- is JSON. effective_at NULL: the state before the first change, all along.
CREATE TABLE plan_revisions (
    id           INTEGER PRIMARY KEY,
    household_id INTEGER NOT NULL REFERENCES households (id),
    subject_type TEXT NOT NULL CHECK (subject_type = 'schedule' OR subject_type = 'person_medication' OR subject_type = 'slot_times' OR subject_type = 'time_zone'),
    subject_id   INTEGER NOT NULL,
    effective_at TEXT,
    state        TEXT NOT NULL
) STRICT;
CREATE INDEX plan_revisions_by_subject ON plan_revisions (subject_type, subject_id, effective_at);
CREATE INDEX plan_revisions_by_household ON plan_revisions (household_id);

-- Sign-in (src/identity): OAuth sessions and their tokens, authorization
-- codes, TOTP multi-factor, failed-attempt counters and sign-in events.
-- Every secret is stored as a SHA-256 digest (tokens, codes, recovery
-- codes) or encrypted with a key kept outside the database (TOTP secrets).

-- One sign-in of one device: its access and refresh tokens hang off it, and
-- revoking it revokes them all at once.
CREATE TABLE IF NOT EXISTS oauth_sessions (
    id             INTEGER PRIMARY KEY,
    account_id     INTEGER NOT NULL REFERENCES accounts (id),
    client_id      TEXT NOT NULL,
    device_label   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    last_used_at   TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    revoked_at     TEXT,
    revoked_reason TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS oauth_sessions_by_account ON oauth_sessions (account_id, id);

CREATE TABLE IF NOT EXISTS oauth_tokens (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES oauth_sessions (id),
    kind          TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    selector      TEXT NOT NULL UNIQUE,
    secret_sha256 BLOB NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    -- A refresh token is exchanged once; presenting it again is reuse.
    rotated_at    TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS oauth_tokens_by_session ON oauth_tokens (session_id);

CREATE TABLE IF NOT EXISTS oauth_codes (
    id             INTEGER PRIMARY KEY,
    selector       TEXT NOT NULL UNIQUE,
    secret_sha256  BLOB NOT NULL,
    account_id     INTEGER NOT NULL REFERENCES accounts (id),
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    scope          TEXT NOT NULL,
    device_label   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    used_at        TEXT,
    -- The session its redemption started, revoked if the code comes back.
    session_id     INTEGER REFERENCES oauth_sessions (id)
) STRICT;

CREATE TABLE IF NOT EXISTS account_totp (
    account_id       INTEGER PRIMARY KEY REFERENCES accounts (id),
    -- AES-256-GCM: 12-byte nonce followed by the ciphertext and tag.
    secret_encrypted BLOB NOT NULL,
    confirmed_at     TEXT,
    -- The last time step a code was accepted for: a code is used once.
    last_step        INTEGER,
    created_at       TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS recovery_codes (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts (id),
    code_sha256 BLOB NOT NULL,
    used_at     TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS recovery_codes_by_account ON recovery_codes (account_id);

-- A password accepted for an account with a second factor, waiting for it.
CREATE TABLE IF NOT EXISTS sign_in_pending (
    id            INTEGER PRIMARY KEY,
    selector      TEXT NOT NULL UNIQUE,
    secret_sha256 BLOB NOT NULL,
    account_id    INTEGER NOT NULL REFERENCES accounts (id),
    expires_at    TEXT NOT NULL
) STRICT;

-- Failed sign-ins per key ('address:...' or 'account:<id>'): each failure
-- past the free ones doubles the wait before the next attempt.
CREATE TABLE IF NOT EXISTS sign_in_failures (
    key             TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at TEXT NOT NULL,
    locked_until    TEXT
) STRICT;

-- Account-level security events (sign-in successes and failures, MFA
-- changes); never a password, code or token.
CREATE TABLE IF NOT EXISTS sign_in_events (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER REFERENCES accounts (id),
    event_type  TEXT NOT NULL,
    address     TEXT NOT NULL,
    metadata    TEXT NOT NULL DEFAULT '{}',
    occurred_at TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS sign_in_events_by_account ON sign_in_events (account_id, id);

-- Reminders (src/reminders/): where a member is reached, what is owed to
-- them, and the engine's progress.

-- A browser's Web Push subscription. It belongs to the member and to the
-- credential (device) that made it, an app token or a sign-in session;
-- that credential has at most one.
CREATE TABLE push_subscriptions (
    id            INTEGER PRIMARY KEY,
    household_id  INTEGER NOT NULL REFERENCES households (id),
    membership_id INTEGER NOT NULL REFERENCES memberships (id),
    app_token_id  INTEGER REFERENCES app_tokens (id),
    session_id    INTEGER REFERENCES oauth_sessions (id),
    endpoint      TEXT NOT NULL,
    p256dh        TEXT NOT NULL,
    auth          TEXT NOT NULL,
    created_at    TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX push_subscriptions_one_per_device
    ON push_subscriptions (membership_id, coalesce(app_token_id, 0), coalesce(session_id, 0));
CREATE INDEX push_subscriptions_by_membership ON push_subscriptions (membership_id);

-- A phone app's push token (FCM for android, APNs for ios), per member and device.
CREATE TABLE native_device_tokens (
    id            INTEGER PRIMARY KEY,
    household_id  INTEGER NOT NULL REFERENCES households (id),
    membership_id INTEGER NOT NULL REFERENCES memberships (id),
    platform      TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
    token         TEXT NOT NULL,
    device_name   TEXT,
    created_at    TEXT NOT NULL,
    UNIQUE (membership_id, token)
) STRICT;

-- A member's ntfy topic (at most one).
CREATE TABLE ntfy_channels (
    id            INTEGER PRIMARY KEY,
    household_id  INTEGER NOT NULL REFERENCES households (id),
    membership_id INTEGER NOT NULL UNIQUE REFERENCES memberships (id),
    topic_url     TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

-- Every notification owed to one channel of one member. subject names what
-- it is about (a dose occurrence, a medication's low-stock episode, a test),
-- so one notification is queued once per channel whatever happens.
-- target_id is the push subscription, device token or ntfy channel; a row
-- outlives its target (the counts stay) but is never sent elsewhere.
CREATE TABLE reminder_outbox (
    id              INTEGER PRIMARY KEY,
    household_id    INTEGER NOT NULL REFERENCES households (id),
    membership_id   INTEGER NOT NULL REFERENCES memberships (id),
    channel         TEXT NOT NULL CHECK (channel = 'web_push' OR channel = 'fcm' OR channel = 'apns' OR channel = 'ntfy'),
    target_id       INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind = 'dose_due' OR kind = 'missed_dose' OR kind = 'low_stock' OR kind = 'test'),
    subject         TEXT NOT NULL,
    due_at          TEXT NOT NULL,
    title           TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status = 'pending' OR status = 'delivered' OR status = 'failed' OR status = 'dropped'),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT,
    UNIQUE (subject, kind, channel, target_id)
) STRICT;
CREATE INDEX reminder_outbox_pending ON reminder_outbox (status, next_attempt_at);
CREATE INDEX reminder_outbox_by_household ON reminder_outbox (household_id, channel, status);

-- Per household: every notification due at or before scanned_until has
-- been queued (or dropped), so a restart resumes from here; and the
-- missed-dose grace period.
CREATE TABLE reminder_households (
    household_id              INTEGER PRIMARY KEY REFERENCES households (id),
    scanned_until             TEXT,
    missed_dose_grace_minutes INTEGER NOT NULL DEFAULT 60 CHECK (missed_dose_grace_minutes BETWEEN 1 AND 1440)
) STRICT;

-- Low-stock episodes: a medication is low from when its supply reaches its
-- reorder threshold until it is above it again; each episode notifies once.
CREATE TABLE reminder_low_stock (
    medication_id INTEGER PRIMARY KEY REFERENCES medications (id),
    episode       INTEGER NOT NULL,
    low           INTEGER NOT NULL CHECK (low IN (0, 1))
) STRICT;

-- Invitations (src/household/invitations): an administrator invites an
-- email into the household with a role, permissions, a person (new or
-- existing) and person access grants. The token is stored as a selector
-- and a SHA-256 digest of its secret, never itself.
CREATE TABLE IF NOT EXISTS invitations (
    id                       INTEGER PRIMARY KEY,
    household_id             INTEGER NOT NULL REFERENCES households (id),
    email                    TEXT NOT NULL COLLATE NOCASE,
    role                     TEXT NOT NULL CHECK (role = 'owner' OR role = 'administrator' OR role = 'member'),
    inventory_management     INTEGER NOT NULL CHECK (inventory_management IN (0, 1)),
    location_management      INTEGER NOT NULL CHECK (location_management IN (0, 1)),
    adult_review             INTEGER NOT NULL CHECK (adult_review IN (0, 1)),
    -- Either an existing person to link or a new person (JSON) to create.
    person_id                INTEGER REFERENCES people (id),
    new_person               TEXT,
    -- JSON array of {person_id, access_level, relationship_type}.
    grants                   TEXT NOT NULL,
    selector                 TEXT NOT NULL UNIQUE,
    secret_sha256            BLOB NOT NULL,
    status                   TEXT NOT NULL DEFAULT 'pending' CHECK (status = 'pending' OR status = 'accepted' OR status = 'revoked'),
    created_by_membership_id INTEGER REFERENCES memberships (id),
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL,
    expires_at               TEXT NOT NULL,
    accepted_membership_id   INTEGER REFERENCES memberships (id),
    accepted_at              TEXT,
    revoked_at               TEXT,
    CHECK ((person_id IS NULL) <> (new_person IS NULL))
) STRICT;
CREATE INDEX IF NOT EXISTS invitations_by_household ON invitations (household_id, id);

-- The mail outbox (src/mail): every email is written here in the
-- transaction that causes it and sent by a background task with retries,
-- so a restart loses nothing queued and no request waits on SMTP.
CREATE TABLE IF NOT EXISTS mail_outbox (
    id              INTEGER PRIMARY KEY,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    text_body       TEXT NOT NULL,
    html_body       TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    sent_at         TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS mail_outbox_due ON mail_outbox (sent_at, next_attempt_at);

-- Delegated sign-in (src/identity/oidc). An identity of the OpenID Connect
-- provider (issuer and subject) linked to the account it signs in as, with
-- the name it was shown under (the account lists and removes it); and
-- the sign-ins sent to the provider and not yet back, each found by the
-- SHA-256 of its state (the browser holds the state itself in a cookie).
CREATE TABLE IF NOT EXISTS linked_identities (
    id           INTEGER PRIMARY KEY,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    UNIQUE (issuer, subject)
) STRICT;
CREATE INDEX IF NOT EXISTS linked_identities_by_account ON linked_identities (account_id);

CREATE TABLE IF NOT EXISTS oidc_pending (
    id            INTEGER PRIMARY KEY,
    state_sha256  BLOB NOT NULL UNIQUE,
    nonce         TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    -- JSON: the authorization request to finish, or the invitation page.
    purpose       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
) STRICT;

-- A provider identity no account matched, waiting for the browser that
-- came back from the provider (it holds the token in a cookie too) to sign
-- in to an account and confirm the link: the account, the step it signed
-- in with and the confirmation's digest are set once it has.
CREATE TABLE IF NOT EXISTS oidc_pending_links (
    id             INTEGER PRIMARY KEY,
    selector       TEXT NOT NULL UNIQUE,
    secret_sha256  BLOB NOT NULL,
    issuer         TEXT NOT NULL,
    subject        TEXT NOT NULL,
    label          TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    account_id     INTEGER REFERENCES accounts (id) ON DELETE CASCADE,
    step           TEXT,
    confirm_sha256 BLOB
) STRICT;
-- Medication review prompts (src/reports): interaction evidence imported
-- from public drug labels (`pillbox evidence import`), and the prompts a
-- background pass makes when a person's active medicines are named together
-- by that evidence. Evidence is instance-wide (public text, no household);
-- a prompt keeps its own immutable JSON snapshot of the evidence it was
-- made from, so re-importing a label never changes a prompt.
CREATE TABLE IF NOT EXISTS review_evidence (
    id               INTEGER PRIMARY KEY,
    source_name      TEXT NOT NULL,
    record_id        TEXT NOT NULL,
    url              TEXT NOT NULL,
    version          TEXT,
    effective_date   TEXT,
    -- JSON arrays of the names as the source spells them.
    product_names    TEXT NOT NULL DEFAULT '[]',
    ingredient_names TEXT NOT NULL DEFAULT '[]',
    evidence_text    TEXT NOT NULL,
    imported_at      TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    UNIQUE (source_name, record_id)
) STRICT;

-- Normalised product and ingredient names of each evidence record: the
-- pass finds a medicine's labels by name through this index.
CREATE TABLE IF NOT EXISTS review_evidence_names (
    name        TEXT NOT NULL,
    evidence_id INTEGER NOT NULL REFERENCES review_evidence (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('product', 'ingredient')),
    PRIMARY KEY (name, evidence_id, kind)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS review_evidence_names_by_evidence ON review_evidence_names (evidence_id);

-- One prompt per (person, pair of medicines, evidence record), never made
-- twice: the unique index orders the pair so either way round is the same.
-- evidence is the immutable snapshot (JSON); only the review fields change.
CREATE TABLE IF NOT EXISTS medication_review_prompts (
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
CREATE UNIQUE INDEX medication_review_prompts_by_household_portable_id ON medication_review_prompts (household_id, portable_id);
CREATE UNIQUE INDEX IF NOT EXISTS medication_review_prompts_once ON medication_review_prompts
    (person_id, min(medication_id, other_medication_id), max(medication_id, other_medication_id), evidence_id);
CREATE INDEX IF NOT EXISTS medication_review_prompts_by_household ON medication_review_prompts (household_id, id);

-- A stamp that changes, in the same commit, whenever a row the access view
-- (src/auth/view.rs) keeps may have changed: app tokens, memberships, OAuth
-- sessions and their tokens, by this server or by a command run beside it.
-- The view then keeps its rows across commits that touch none of them (a
-- recorded dose) instead of reading the caller's credential again after
-- every commit. Random rather than counted, so that a restored copy of the
-- file never matches a stamp the view holds unless its rows are the same.
CREATE TABLE IF NOT EXISTS access_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS app_tokens_insert_stamps_access AFTER INSERT ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS app_tokens_update_stamps_access AFTER UPDATE ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS app_tokens_delete_stamps_access AFTER DELETE ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_insert_stamps_access AFTER INSERT ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_update_stamps_access AFTER UPDATE ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_delete_stamps_access AFTER DELETE ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_insert_stamps_access AFTER INSERT ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_update_stamps_access AFTER UPDATE ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_delete_stamps_access AFTER DELETE ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_insert_stamps_access AFTER INSERT ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_update_stamps_access AFTER UPDATE ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_delete_stamps_access AFTER DELETE ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
INSERT OR IGNORE INTO access_stamp (id, stamp) VALUES (1, random());

-- A stamp that changes, in the same commit, whenever a row of the care
-- plan's tables may have changed: the household (its time zone), people,
-- schedules, direct assignments, plan revisions and pause periods, by this
-- server or by a command run beside it. The writer keeps what a take is
-- judged against under it (db::kept_with_plan) instead of reading the
-- source, its history and pauses again for every dose. Random, as the
-- access stamp is, so that a restored copy never matches a stamp the
-- writer holds unless its plan is the same.
CREATE TABLE IF NOT EXISTS plan_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS households_insert_stamps_plan AFTER INSERT ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS households_update_stamps_plan AFTER UPDATE ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS households_delete_stamps_plan AFTER DELETE ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_insert_stamps_plan AFTER INSERT ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_update_stamps_plan AFTER UPDATE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_delete_stamps_plan AFTER DELETE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_insert_stamps_plan AFTER INSERT ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_update_stamps_plan AFTER UPDATE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_delete_stamps_plan AFTER DELETE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_insert_stamps_plan AFTER INSERT ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_update_stamps_plan AFTER UPDATE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_delete_stamps_plan AFTER DELETE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_insert_stamps_plan AFTER INSERT ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_update_stamps_plan AFTER UPDATE ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_delete_stamps_plan AFTER DELETE ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_insert_stamps_plan AFTER INSERT ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_update_stamps_plan AFTER UPDATE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_delete_stamps_plan AFTER DELETE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
INSERT OR IGNORE INTO plan_stamp (id, stamp) VALUES (1, random());

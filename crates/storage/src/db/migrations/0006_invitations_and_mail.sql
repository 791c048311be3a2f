-- Invitations (src/household/invitations): an administrator invites an
-- email into the household with a role, permissions, a person (new or
-- existing) and person access grants. The token is stored as a selector
-- and a SHA-256 digest of its secret, never itself.
CREATE TABLE IF NOT EXISTS invitations (
    id                       INTEGER PRIMARY KEY,
    household_id             INTEGER NOT NULL REFERENCES households (id),
    email                    TEXT NOT NULL COLLATE NOCASE,
    role                     TEXT NOT NULL CHECK (role IN ('owner', 'administrator', 'member')),
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
    status                   TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'revoked')),
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

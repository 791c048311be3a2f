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

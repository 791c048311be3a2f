-- Delegated sign-in, issue 48. A linked provider identity gets an id of its
-- own (an account lists and removes its links) and the name it was shown
-- under; the old table had only (issuer, subject). A pending link is now
-- bound to the browser that came back from the provider and, once that
-- browser's account has signed in, waits for an explicit confirmation:
-- the account and the step it signed in with are kept on the row, with the
-- digest of the confirmation's secret. Pending links live ten minutes, so
-- the old rows are dropped rather than carried over.
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
INSERT INTO linked_identities (issuer, subject, account_id, label, created_at, last_used_at)
    SELECT issuer, subject, account_id, subject, created_at, last_used_at FROM oidc_identities;
DROP TABLE oidc_identities;

DROP TABLE oidc_pending_links;
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

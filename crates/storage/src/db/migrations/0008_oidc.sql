-- Delegated sign-in (src/identity/oidc). An identity of the OpenID Connect
-- provider (issuer and subject) linked to the account it signs in as; and
-- the sign-ins sent to the provider and not yet back, each found by the
-- SHA-256 of its state (the browser holds the state itself in a cookie).
CREATE TABLE IF NOT EXISTS oidc_identities (
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;
CREATE INDEX IF NOT EXISTS oidc_identities_by_account ON oidc_identities (account_id);

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

-- A provider identity no account matched, waiting for its owner to sign in
-- with a password once to link it (the token is in the sign-in form).
CREATE TABLE IF NOT EXISTS oidc_pending_links (
    id            INTEGER PRIMARY KEY,
    selector      TEXT NOT NULL UNIQUE,
    secret_sha256 BLOB NOT NULL,
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    expires_at    TEXT NOT NULL
) STRICT;

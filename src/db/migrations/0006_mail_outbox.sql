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

-- Reminders (src/reminders/): where a member is reached, what is owed to
-- them, and the engine's progress. Written so it also applies over a
-- database that already has these tables (a test lowers user_version).

-- A browser's Web Push subscription. It belongs to the member and to the
-- credential (device) that made it, an app token or a sign-in session;
-- that credential has at most one.
CREATE TABLE IF NOT EXISTS push_subscriptions (
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
CREATE UNIQUE INDEX IF NOT EXISTS push_subscriptions_one_per_device
    ON push_subscriptions (membership_id, coalesce(app_token_id, 0), coalesce(session_id, 0));
CREATE INDEX IF NOT EXISTS push_subscriptions_by_membership ON push_subscriptions (membership_id);

-- A phone app's push token (FCM for android, APNs for ios), per member and device.
CREATE TABLE IF NOT EXISTS native_device_tokens (
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
CREATE TABLE IF NOT EXISTS ntfy_channels (
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
CREATE TABLE IF NOT EXISTS reminder_outbox (
    id              INTEGER PRIMARY KEY,
    household_id    INTEGER NOT NULL REFERENCES households (id),
    membership_id   INTEGER NOT NULL REFERENCES memberships (id),
    channel         TEXT NOT NULL CHECK (channel IN ('web_push', 'fcm', 'apns', 'ntfy')),
    target_id       INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('dose_due', 'missed_dose', 'low_stock', 'test')),
    subject         TEXT NOT NULL,
    due_at          TEXT NOT NULL,
    title           TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dropped')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT,
    UNIQUE (subject, kind, channel, target_id)
) STRICT;
CREATE INDEX IF NOT EXISTS reminder_outbox_pending ON reminder_outbox (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS reminder_outbox_by_household ON reminder_outbox (household_id, channel, status);

-- Per household: every notification due at or before scanned_until has
-- been queued (or dropped), so a restart resumes from here; and the
-- missed-dose grace period.
CREATE TABLE IF NOT EXISTS reminder_households (
    household_id              INTEGER PRIMARY KEY REFERENCES households (id),
    scanned_until             TEXT,
    missed_dose_grace_minutes INTEGER NOT NULL DEFAULT 60 CHECK (missed_dose_grace_minutes BETWEEN 1 AND 1440)
) STRICT;

-- Low-stock episodes: a medication is low from when its supply reaches its
-- reorder threshold until it is above it again; each episode notifies once.
CREATE TABLE IF NOT EXISTS reminder_low_stock (
    medication_id INTEGER PRIMARY KEY REFERENCES medications (id),
    episode       INTEGER NOT NULL,
    low           INTEGER NOT NULL CHECK (low IN (0, 1))
) STRICT;

-- Plan history (src/care/dose_occurrences/history.rs): what the expected-dose
-- projection depends on, from each change on. Existing sources need no rows:
-- a subject without revisions has had its current state all along, and its
-- first change saves that state first.
CREATE TABLE plan_revisions (
    id           INTEGER PRIMARY KEY,
    household_id INTEGER NOT NULL REFERENCES households (id),
    subject_type TEXT NOT NULL CHECK (subject_type IN ('schedule', 'person_medication', 'slot_times', 'time_zone')),
    subject_id   INTEGER NOT NULL,
    effective_at TEXT,
    state        TEXT NOT NULL
) STRICT;
CREATE INDEX plan_revisions_by_subject ON plan_revisions (subject_type, subject_id, effective_at);
CREATE INDEX plan_revisions_by_household ON plan_revisions (household_id);

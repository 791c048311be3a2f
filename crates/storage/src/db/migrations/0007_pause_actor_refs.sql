-- The original actors of an imported pause period, kept as the bundle's
-- portable person references when no single membership of the household
-- matches them (import rule 8): the period still says who paused it and
-- who resumed it, while its membership columns stay null (unavailable).
CREATE TABLE IF NOT EXISTS medication_pause_period_actor_refs (
    pause_period_id        INTEGER PRIMARY KEY REFERENCES medication_pause_periods (id),
    recorded_by_person_ref TEXT,
    resumed_by_person_ref  TEXT
) STRICT;

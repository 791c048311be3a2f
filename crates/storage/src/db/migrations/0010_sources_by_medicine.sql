-- A person's sources of one medication: every recorded take looks up the
-- other sources of the same medicine for the person (their gap between
-- doses counts too); without these the lookup read every source the person
-- has.
CREATE INDEX IF NOT EXISTS schedules_by_person_medication ON schedules (person_id, medication_id);
CREATE INDEX IF NOT EXISTS person_medications_by_person_medication
    ON person_medications (person_id, medication_id);

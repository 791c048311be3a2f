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
    portable_id               TEXT NOT NULL UNIQUE,
    household_id              INTEGER NOT NULL REFERENCES households (id),
    person_id                 INTEGER NOT NULL REFERENCES people (id),
    medication_id             INTEGER NOT NULL REFERENCES medications (id),
    other_medication_id       INTEGER NOT NULL REFERENCES medications (id),
    evidence_id               INTEGER NOT NULL REFERENCES review_evidence (id),
    evidence                  TEXT NOT NULL,
    priority                  TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high')),
    review_status             TEXT NOT NULL DEFAULT 'pending' CHECK (review_status IN ('pending', 'hidden', 'acknowledged', 'practitioner_reviewed', 'practitioner_changed')),
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
CREATE UNIQUE INDEX IF NOT EXISTS medication_review_prompts_once ON medication_review_prompts
    (person_id, min(medication_id, other_medication_id), max(medication_id, other_medication_id), evidence_id);
CREATE INDEX IF NOT EXISTS medication_review_prompts_by_household ON medication_review_prompts (household_id, id);

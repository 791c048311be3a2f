-- A stamp that changes, in the same commit, whenever a row of the care
-- plan's tables may have changed: the household (its time zone), people,
-- schedules, direct assignments, plan revisions and pause periods, by this
-- server or by a command run beside it. The writer keeps what a take is
-- judged against under it (db::kept_with_plan) instead of reading the
-- source, its history and pauses again for every dose. Random, as the
-- access stamp is, so that a restored copy never matches a stamp the
-- writer holds unless its plan is the same.
CREATE TABLE IF NOT EXISTS plan_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS households_insert_stamps_plan AFTER INSERT ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS households_update_stamps_plan AFTER UPDATE ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS households_delete_stamps_plan AFTER DELETE ON households
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_insert_stamps_plan AFTER INSERT ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_update_stamps_plan AFTER UPDATE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS people_delete_stamps_plan AFTER DELETE ON people
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_insert_stamps_plan AFTER INSERT ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_update_stamps_plan AFTER UPDATE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS schedules_delete_stamps_plan AFTER DELETE ON schedules
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_insert_stamps_plan AFTER INSERT ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_update_stamps_plan AFTER UPDATE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS person_medications_delete_stamps_plan AFTER DELETE ON person_medications
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_insert_stamps_plan AFTER INSERT ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_update_stamps_plan AFTER UPDATE ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS plan_revisions_delete_stamps_plan AFTER DELETE ON plan_revisions
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_insert_stamps_plan AFTER INSERT ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_update_stamps_plan AFTER UPDATE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS medication_pause_periods_delete_stamps_plan AFTER DELETE ON medication_pause_periods
    BEGIN UPDATE plan_stamp SET stamp = random(); END;
INSERT OR IGNORE INTO plan_stamp (id, stamp) VALUES (1, random());

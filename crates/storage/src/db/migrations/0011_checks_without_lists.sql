-- A CHECK of a column against a list of three or more values made SQLite
-- build a temporary b-tree of the list on every insert (and on every update
-- of that column): about 30,000 instructions, more than the insert itself,
-- on every change-feed entry. The same rule written as comparisons costs
-- nothing. Nothing stored changes, so the definitions are rewritten in
-- place (SQLite's documented way for changes that leave the stored content
-- as it is); the migration then bumps the schema cookie (src/db/migrate.rs).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (person_type IN (''adult'', ''minor'', ''dependent_adult''))',
        'CHECK (person_type = ''adult'' OR person_type = ''minor'' OR person_type = ''dependent_adult'')')
  WHERE type = 'table' AND name = 'people';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'CHECK (role IN (''owner'', ''administrator'', ''member''))',
        'CHECK (role = ''owner'' OR role = ''administrator'' OR role = ''member'')'),
        'CHECK (status IN (''active'', ''suspended'', ''revoked''))',
        'CHECK (status = ''active'' OR status = ''suspended'' OR status = ''revoked'')')
  WHERE type = 'table' AND name = 'memberships';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'CHECK (access_level IN (''view'', ''record'', ''manage''))',
        'CHECK (access_level = ''view'' OR access_level = ''record'' OR access_level = ''manage'')'),
        'CHECK (relationship_type IN (''self'', ''parent'', ''family_member'', ''carer'', ''professional''))',
        'CHECK (relationship_type = ''self'' OR relationship_type = ''parent'' OR relationship_type = ''family_member'' OR relationship_type = ''carer'' OR relationship_type = ''professional'')')
  WHERE type = 'table' AND name = 'person_access_grants';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (action IN (''create'', ''update'', ''delete''))',
        'CHECK (action = ''create'' OR action = ''update'' OR action = ''delete'')')
  WHERE type = 'table' AND name = 'change_feed';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (default_dose_cycle IN (''daily'', ''weekly'', ''monthly''))',
        'CHECK (default_dose_cycle = ''daily'' OR default_dose_cycle = ''weekly'' OR default_dose_cycle = ''monthly'')')
  WHERE type = 'table' AND name = 'dosage_options';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (severity IN (''mild'', ''moderate'', ''severe''))',
        'CHECK (severity = ''mild'' OR severity = ''moderate'' OR severity = ''severe'')')
  WHERE type = 'table' AND name = 'health_events';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (dose_cycle IN (''daily'', ''weekly'', ''monthly''))',
        'CHECK (dose_cycle = ''daily'' OR dose_cycle = ''weekly'' OR dose_cycle = ''monthly'')')
  WHERE type = 'table' AND name = 'schedules';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (dose_cycle IN (''daily'', ''weekly'', ''monthly''))',
        'CHECK (dose_cycle = ''daily'' OR dose_cycle = ''weekly'' OR dose_cycle = ''monthly'')')
  WHERE type = 'table' AND name = 'person_medications';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (reason IN (''clinician_advice'', ''side_effects'', ''out_of_supply'', ''other'', ''reason_not_recorded''))',
        'CHECK (reason = ''clinician_advice'' OR reason = ''side_effects'' OR reason = ''out_of_supply'' OR reason = ''other'' OR reason = ''reason_not_recorded'')')
  WHERE type = 'table' AND name = 'medication_pause_periods';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (outcome IN (''not_taken'', ''taken'', ''open''))',
        'CHECK (outcome = ''not_taken'' OR outcome = ''taken'' OR outcome = ''open'')')
  WHERE type = 'table' AND name = 'dose_occurrences';
UPDATE sqlite_schema SET sql = replace(sql,
        'CHECK (subject_type IN (''schedule'', ''person_medication'', ''slot_times'', ''time_zone''))',
        'CHECK (subject_type = ''schedule'' OR subject_type = ''person_medication'' OR subject_type = ''slot_times'' OR subject_type = ''time_zone'')')
  WHERE type = 'table' AND name = 'plan_revisions';
UPDATE sqlite_schema SET sql = replace(replace(replace(sql,
        'CHECK (channel IN (''web_push'', ''fcm'', ''apns'', ''ntfy''))',
        'CHECK (channel = ''web_push'' OR channel = ''fcm'' OR channel = ''apns'' OR channel = ''ntfy'')'),
        'CHECK (kind IN (''dose_due'', ''missed_dose'', ''low_stock'', ''test''))',
        'CHECK (kind = ''dose_due'' OR kind = ''missed_dose'' OR kind = ''low_stock'' OR kind = ''test'')'),
        'CHECK (status IN (''pending'', ''delivered'', ''failed'', ''dropped''))',
        'CHECK (status = ''pending'' OR status = ''delivered'' OR status = ''failed'' OR status = ''dropped'')')
  WHERE type = 'table' AND name = 'reminder_outbox';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'CHECK (role IN (''owner'', ''administrator'', ''member''))',
        'CHECK (role = ''owner'' OR role = ''administrator'' OR role = ''member'')'),
        'CHECK (status IN (''pending'', ''accepted'', ''revoked''))',
        'CHECK (status = ''pending'' OR status = ''accepted'' OR status = ''revoked'')')
  WHERE type = 'table' AND name = 'invitations';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'CHECK (priority IN (''low'', ''medium'', ''high''))',
        'CHECK (priority = ''low'' OR priority = ''medium'' OR priority = ''high'')'),
        'CHECK (review_status IN (''pending'', ''hidden'', ''acknowledged'', ''practitioner_reviewed'', ''practitioner_changed''))',
        'CHECK (review_status = ''pending'' OR review_status = ''hidden'' OR review_status = ''acknowledged'' OR review_status = ''practitioner_reviewed'' OR review_status = ''practitioner_changed'')')
  WHERE type = 'table' AND name = 'review_evidence_names';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'CHECK (priority IN (''low'', ''medium'', ''high''))',
        'CHECK (priority = ''low'' OR priority = ''medium'' OR priority = ''high'')'),
        'CHECK (review_status IN (''pending'', ''hidden'', ''acknowledged'', ''practitioner_reviewed'', ''practitioner_changed''))',
        'CHECK (review_status = ''pending'' OR review_status = ''hidden'' OR review_status = ''acknowledged'' OR review_status = ''practitioner_reviewed'' OR review_status = ''practitioner_changed'')')
  WHERE type = 'table' AND name = 'medication_review_prompts';
PRAGMA writable_schema = RESET;

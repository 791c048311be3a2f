//! The portable collections an import reads: each one's record type,
//! table and the fields its records may carry.

use crate::domain::record_type;

/// A portable collection: its name, record type, table and the fields a
/// record of it may carry besides portable_id, updated_at and etag.
pub struct Collection {
    pub name: &'static str,
    pub record_type: &'static str,
    pub table: &'static str,
    pub fields: &'static [&'static str],
}

pub const PEOPLE: Collection = Collection {
    name: "people",
    record_type: record_type::PERSON,
    table: "people",
    fields: &[
        "name",
        "email",
        "date_of_birth",
        "person_type",
        "has_capacity",
        "location_portable_ids",
        "notification_preference_portable_id",
    ],
};
pub const LOCATIONS: Collection = Collection {
    name: "locations",
    record_type: record_type::LOCATION,
    table: "locations",
    fields: &["name", "description"],
};
pub const MEDICATIONS: Collection = Collection {
    name: "medications",
    record_type: record_type::MEDICATION,
    table: "medications",
    fields: &[
        "location_portable_id",
        "name",
        "friendly_name",
        "category",
        "description",
        "dose_amount",
        "dose_unit",
        "default_schedule_type",
        "current_supply",
        "reorder_threshold",
        "barcode",
        "dmd_code",
        "dmd_system",
        "dmd_concept_class",
    ],
};
pub const DOSAGE_OPTIONS: Collection = Collection {
    name: "dosage_options",
    record_type: record_type::DOSAGE_OPTION,
    table: "dosage_options",
    fields: &[
        "medication_portable_id",
        "amount",
        "unit",
        "frequency",
        "description",
        "default_for_adults",
        "default_for_children",
        "default_max_daily_doses",
        "default_min_hours_between_doses",
        "default_dose_cycle",
        "current_supply",
        "reorder_threshold",
    ],
};
pub const SCHEDULES: Collection = Collection {
    name: "schedules",
    record_type: record_type::SCHEDULE,
    table: "schedules",
    fields: &[
        "source_dosage_option_portable_id",
        "retired_at",
        "person_portable_id",
        "medication_portable_id",
        "dose_amount",
        "dose_unit",
        "frequency",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "schedule_type",
        "schedule_config",
        "start_date",
        "end_date",
        "active",
        "notes",
    ],
};
pub const PERSON_MEDICATIONS: Collection = Collection {
    name: "person_medications",
    record_type: record_type::PERSON_MEDICATION,
    table: "person_medications",
    fields: &[
        "source_dosage_option_portable_id",
        "retired_at",
        "person_portable_id",
        "medication_portable_id",
        "dose_amount",
        "dose_unit",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "administration_kind",
        "active",
        "notes",
        "position",
    ],
};
pub const MEDICATION_TAKES: Collection = Collection {
    name: "medication_takes",
    record_type: record_type::MEDICATION_TAKE,
    table: "medication_takes",
    fields: &[
        "client_uuid",
        "source_type",
        "source_portable_id",
        "taken_at",
        "dose_amount",
        "dose_unit",
        "taken_from_medication_portable_id",
        "taken_from_location_portable_id",
    ],
};
pub const NOTIFICATION_PREFERENCES: Collection = Collection {
    name: "notification_preferences",
    record_type: record_type::NOTIFICATION_PREFERENCE,
    table: "notification_preferences",
    fields: &[
        "person_portable_id",
        "enabled",
        "dose_due_enabled",
        "missed_dose_enabled",
        "low_stock_enabled",
        "private_text_enabled",
        "morning_time",
        "afternoon_time",
        "evening_time",
        "night_time",
    ],
};
pub const HEALTH_EVENTS: Collection = Collection {
    name: "health_events",
    record_type: record_type::HEALTH_EVENT,
    table: "health_events",
    fields: &[
        "person_portable_id",
        "event_kind",
        "severity",
        "title",
        "notes",
        "started_on",
        "ended_on",
        "medication_portable_ids",
    ],
};
pub const PAUSE_PERIODS: Collection = Collection {
    name: "medication_pause_periods",
    record_type: record_type::PAUSE_PERIOD,
    table: "medication_pause_periods",
    fields: &[
        "source_type",
        "source_portable_id",
        "reason",
        "note",
        "started_at",
        "ended_at",
        "created_at",
        "legacy_context",
        "imported_context",
        "recorded_by_person_portable_id",
        "resumed_by_person_portable_id",
    ],
};
pub const DOSE_OCCURRENCES: Collection = Collection {
    name: "dose_occurrences",
    record_type: record_type::DOSE_OCCURRENCE,
    table: "dose_occurrences",
    fields: &[
        "source_type",
        "source_portable_id",
        "window_starts_on",
        "window_ends_on",
        "position",
        "scheduled_at",
        "outcome",
        "reason",
        "note",
        "resolved_at",
        "medication_take_portable_id",
    ],
};

pub const COMMON: &[&str] = &["portable_id", "updated_at", "etag"];

/// Fields an import itself sets on what it restores (the restored mark, and
/// actors only the source's memberships may name), so a reimport of the
/// same bundle does not count them as changes.
pub const IMPORT_MARKED: &[&str] = &[
    "imported_context",
    "recorded_by_person_portable_id",
    "resumed_by_person_portable_id",
];

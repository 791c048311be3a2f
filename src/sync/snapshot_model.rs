//! The portable records of the sync and mobile snapshots (also the
//! `record` of a dose outcome's change-feed entry), their documented
//! schemas, and the envelope the snapshot streams around them.

use std::borrow::Cow;

use rusqlite::Row;
use rusqlite::types::{FromSql, FromSqlResult, ValueRef};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::care::dose_occurrences::model::Outcome;
use crate::care::health_events::model::{EventKind, Severity};
use crate::care::pause_periods::model::{PauseReason, SourceType};
use crate::care::plan::AdministrationKind;
use crate::decimal::Dec;
use crate::domain::{Timestamp, etag};
use crate::household::people::model::PersonType;
use crate::http::openapi::{Date, PortableId};
use crate::medicine::vocab::{ConceptClass, DoseCycle, DoseUnit, ScheduleType};

pub const FORMAT_V1: &str = "service.portable.v1";
pub const FORMAT_V2: &str = "service.portable.v2";

/// The common fields: portable_id, updated_at and etag from columns 0..=2
/// (portable_id, updated_at, lock_version).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Common {
    #[schemars(with = "PortableId")]
    pub portable_id: String,
    pub updated_at: Timestamp,
    /// The record's strong ETag, as the ETag header of its single-resource read
    pub etag: String,
}

fn common(r: &Row<'_>) -> rusqlite::Result<Common> {
    let portable_id: String = r.get(0)?;
    let lock_version: i64 = r.get(2)?;
    Ok(Common {
        etag: etag(&portable_id, lock_version),
        portable_id,
        updated_at: r.get(1)?,
    })
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, inline)]
pub struct Scope {
    #[schemars(with = "PortableId")]
    pub household_portable_id: String,
    #[schemars(with = "Vec<PortableId>")]
    pub person_portable_ids: Vec<String>,
}

/// A portable record: the common fields (columns 0..=2) and then one field
/// per column, in the order the query selects them; `filled_later` fields
/// (lists from a second query) start empty. Every field is present (null
/// where empty), nothing else.
macro_rules! portable_record {
    ($name:ident as $schema:literal {
        $($(#[$meta:meta])* $field:ident : $ty:ty,)*
    } $(filled_later { $($(#[$later_meta:meta])* $later:ident : $later_ty:ty,)* })?) => {
        #[derive(Debug, Clone, Serialize, JsonSchema)]
        #[schemars(deny_unknown_fields, rename = $schema)]
        pub struct $name {
            #[serde(flatten)]
            pub common: Common,
            $($(#[$meta])* pub $field: $ty,)*
            $($($(#[$later_meta])* pub $later: $later_ty,)*)?
        }

        impl $name {
            pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<$name> {
                let mut column = 2;
                Ok($name {
                    common: common(r)?,
                    $($field: {
                        column += 1;
                        r.get(column)?
                    },)*
                    $($($later: Default::default(),)*)?
                })
            }
        }
    };
}

/// A JSON object kept as text (a schedule's config), sent as JSON.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline)]
pub struct JsonText(#[schemars(with = "Map<String, Value>")] pub Value);

impl FromSql for JsonText {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<JsonText> {
        let text = value.as_str()?;
        Ok(JsonText(
            serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default())),
        ))
    }
}

portable_record! {
    PersonRecord as "PortablePerson" {
        name: String,
        email: Option<String>,
        #[schemars(with = "Option<Date>")]
        date_of_birth: Option<String>,
        #[schemars(with = "PersonType")]
        person_type: String,
        has_capacity: bool,
        #[schemars(with = "Option<PortableId>")]
        notification_preference_portable_id: Option<String>,
    } filled_later {
        #[schemars(with = "Vec<PortableId>")]
        location_portable_ids: Vec<String>,
    }
}

portable_record! {
    LocationRecord as "PortableLocation" {
        name: String,
        description: Option<String>,
    }
}

portable_record! {
    MedicationRecord as "PortableMedication" {
        #[schemars(with = "Option<PortableId>")]
        location_portable_id: Option<String>,
        name: String,
        friendly_name: Option<String>,
        category: Option<String>,
        description: Option<String>,
        #[schemars(with = "Option<Dec>")]
        dose_amount: Option<String>,
        dose_unit: Option<String>,
        default_schedule_type: Option<String>,
        #[schemars(with = "Dec")]
        current_supply: String,
        #[schemars(with = "Option<Dec>")]
        reorder_threshold: Option<String>,
        barcode: Option<String>,
        dmd_code: Option<String>,
        dmd_system: Option<String>,
        #[schemars(with = "Option<ConceptClass>")]
        dmd_concept_class: Option<String>,
    }
}

portable_record! {
    DosageOptionRecord as "PortableDosageOption" {
        #[schemars(with = "PortableId")]
        medication_portable_id: String,
        #[schemars(with = "Dec")]
        amount: String,
        unit: String,
        frequency: Option<String>,
        description: Option<String>,
        default_for_adults: bool,
        default_for_children: bool,
        default_max_daily_doses: Option<i64>,
        #[schemars(with = "Option<Dec>")]
        default_min_hours_between_doses: Option<String>,
        #[schemars(with = "Option<DoseCycle>")]
        default_dose_cycle: Option<String>,
        #[schemars(with = "Option<Dec>")]
        current_supply: Option<String>,
        #[schemars(with = "Option<Dec>")]
        reorder_threshold: Option<String>,
    }
}

portable_record! {
    ScheduleRecord as "PortableSchedule" {
        #[schemars(with = "Option<PortableId>")]
        source_dosage_option_portable_id: Option<String>,
        retired_at: Option<Timestamp>,
        #[schemars(with = "PortableId")]
        person_portable_id: String,
        #[schemars(with = "PortableId")]
        medication_portable_id: String,
        #[schemars(with = "Dec")]
        dose_amount: String,
        #[schemars(with = "DoseUnit")]
        dose_unit: String,
        frequency: Option<String>,
        #[schemars(with = "Option<DoseCycle>")]
        dose_cycle: Option<String>,
        max_daily_doses: Option<i64>,
        #[schemars(with = "Option<Dec>")]
        min_hours_between_doses: Option<String>,
        #[schemars(with = "ScheduleType")]
        schedule_type: String,
        schedule_config: JsonText,
        #[schemars(with = "Date")]
        start_date: String,
        #[schemars(with = "Option<Date>")]
        end_date: Option<String>,
        active: bool,
        notes: Option<String>,
    }
}

portable_record! {
    PersonMedicationRecord as "PortablePersonMedication" {
        #[schemars(with = "Option<PortableId>")]
        source_dosage_option_portable_id: Option<String>,
        retired_at: Option<Timestamp>,
        #[schemars(with = "PortableId")]
        person_portable_id: String,
        #[schemars(with = "PortableId")]
        medication_portable_id: String,
        #[schemars(with = "Dec")]
        dose_amount: String,
        #[schemars(with = "DoseUnit")]
        dose_unit: String,
        #[schemars(with = "Option<DoseCycle>")]
        dose_cycle: Option<String>,
        max_daily_doses: Option<i64>,
        #[schemars(with = "Option<Dec>")]
        min_hours_between_doses: Option<String>,
        #[schemars(with = "AdministrationKind")]
        administration_kind: String,
        active: bool,
        notes: Option<String>,
        position: i64,
    }
}

portable_record! {
    MedicationTakeRecord as "PortableMedicationTake" {
        client_uuid: Option<String>,
        #[schemars(with = "SourceType")]
        source_type: String,
        #[schemars(with = "Option<PortableId>")]
        source_portable_id: Option<String>,
        taken_at: Timestamp,
        #[schemars(with = "Dec")]
        dose_amount: String,
        #[schemars(with = "DoseUnit")]
        dose_unit: String,
        #[schemars(with = "Option<PortableId>")]
        taken_from_medication_portable_id: Option<String>,
        #[schemars(with = "Option<PortableId>")]
        taken_from_location_portable_id: Option<String>,
    }
}

portable_record! {
    NotificationPreferenceRecord as "PortableNotificationPreference" {
        #[schemars(with = "PortableId")]
        person_portable_id: String,
        enabled: bool,
        dose_due_enabled: bool,
        missed_dose_enabled: bool,
        low_stock_enabled: bool,
        private_text_enabled: bool,
        morning_time: Option<String>,
        afternoon_time: Option<String>,
        evening_time: Option<String>,
        night_time: Option<String>,
    }
}

portable_record! {
    HealthEventRecord as "PortableHealthEvent" {
        #[schemars(with = "PortableId")]
        person_portable_id: String,
        #[schemars(with = "EventKind")]
        event_kind: String,
        #[schemars(with = "Option<Severity>")]
        severity: Option<String>,
        title: String,
        notes: Option<String>,
        #[schemars(with = "Date")]
        started_on: String,
        #[schemars(with = "Option<Date>")]
        ended_on: Option<String>,
    } filled_later {
        #[schemars(with = "Vec<PortableId>")]
        medication_portable_ids: Vec<String>,
    }
}

portable_record! {
    PausePeriodRecord as "PortableMedicationPausePeriod" {
        #[schemars(with = "SourceType")]
        source_type: String,
        #[schemars(with = "Option<PortableId>")]
        source_portable_id: Option<String>,
        #[schemars(with = "PauseReason")]
        reason: String,
        note: Option<String>,
        started_at: Option<Timestamp>,
        ended_at: Option<Timestamp>,
        created_at: Timestamp,
        legacy_context: bool,
        imported_context: bool,
        #[schemars(with = "Option<PortableId>")]
        recorded_by_person_portable_id: Option<String>,
        #[schemars(with = "Option<PortableId>")]
        resumed_by_person_portable_id: Option<String>,
    }
}

portable_record! {
    DoseOccurrenceRecord as "PortableDoseOccurrence" {
        #[schemars(with = "SourceType")]
        source_type: String,
        #[schemars(with = "Option<PortableId>")]
        source_portable_id: Option<String>,
        #[schemars(with = "Date")]
        window_starts_on: String,
        #[schemars(with = "Date")]
        window_ends_on: String,
        #[schemars(range(min = 1))]
        position: i64,
        scheduled_at: Option<Timestamp>,
        #[schemars(with = "Outcome")]
        outcome: String,
        reason: Option<String>,
        note: Option<String>,
        resolved_at: Option<Timestamp>,
        #[schemars(with = "Option<PortableId>")]
        medication_take_portable_id: Option<String>,
    }
}

/// The snapshot's collections, by key, and the record each holds; the v2
/// ones only in the sync snapshot.
fn collections(generator: &mut SchemaGenerator, v2: bool) -> Vec<(&'static str, Schema)> {
    let mut all = vec![
        ("people", generator.subschema_for::<PersonRecord>()),
        ("locations", generator.subschema_for::<LocationRecord>()),
        ("medications", generator.subschema_for::<MedicationRecord>()),
        (
            "dosage_options",
            generator.subschema_for::<DosageOptionRecord>(),
        ),
        ("schedules", generator.subschema_for::<ScheduleRecord>()),
        (
            "person_medications",
            generator.subschema_for::<PersonMedicationRecord>(),
        ),
        (
            "medication_takes",
            generator.subschema_for::<MedicationTakeRecord>(),
        ),
        (
            "notification_preferences",
            generator.subschema_for::<NotificationPreferenceRecord>(),
        ),
        (
            "health_events",
            generator.subschema_for::<HealthEventRecord>(),
        ),
    ];
    if v2 {
        all.push((
            "medication_pause_periods",
            generator.subschema_for::<PausePeriodRecord>(),
        ));
        all.push((
            "dose_occurrences",
            generator.subschema_for::<DoseOccurrenceRecord>(),
        ));
    }
    all
}

// The snapshot is streamed field by field (`snapshot::write_snapshot`), so
// no one type serializes it: its envelope is written here, once, around the
// derived record schemas.
fn envelope(generator: &mut SchemaGenerator, v2: bool, format: &str) -> Schema {
    let collections = collections(generator, v2);
    let names: Vec<&str> = collections.iter().map(|(name, _)| *name).collect();
    let records: Map<String, Value> = collections
        .into_iter()
        .map(|(name, item)| {
            (
                name.to_string(),
                json_schema!({"type": "array", "items": item}).to_value(),
            )
        })
        .collect();
    let mut schema = json_schema!({
        "type": "object", "additionalProperties": false,
        "required": ["format", "scope", "exported_at", "source_instance_id", "records"],
        "properties": {
            "format": {"type": "string", "const": format},
            "scope": generator.subschema_for::<Scope>(),
            "exported_at": generator.subschema_for::<Timestamp>(),
            "source_instance_id": {"type": "string", "description": "The id of this installation"},
            "records": {
                "type": "object", "additionalProperties": false,
                "required": names, "properties": records,
            },
        },
    });
    if v2 {
        let properties = schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .expect("the envelope has properties");
        properties.insert(
            "cursor".into(),
            serde_json::json!({
                "type": "string", "pattern": "^[A-Za-z0-9_-]+$",
                "description": "Opaque change-feed position at the moment of the snapshot; pass it to getSyncChanges",
            }),
        );
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.push("cursor".into());
        }
    }
    schema
}

/// `getSyncSnapshot`'s document (`service.portable.v2`).
pub struct SyncSnapshot;

impl JsonSchema for SyncSnapshot {
    fn schema_name() -> Cow<'static, str> {
        "SyncSnapshot".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        envelope(generator, true, FORMAT_V2)
    }
}

/// `getMobileSnapshot`'s document (`service.portable.v1`).
pub struct MobileSnapshot;

impl JsonSchema for MobileSnapshot {
    fn schema_name() -> Cow<'static, str> {
        "MobileSnapshot".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        envelope(generator, false, FORMAT_V1)
    }
}

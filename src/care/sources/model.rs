//! The API shapes schedules and direct assignments (the two kinds of dose
//! source) share: the dose, the fields every stored source begins and ends
//! with, and the attributes both kinds take (`source_attributes!`).

use schemars::JsonSchema;
use serde::Serialize;

use crate::decimal::{Dec, NonNegativeDecimal, PositiveDecimal};
use crate::domain::{AtLeast, ResourceId, Text, Timestamp};
use crate::http::openapi;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// The dose fields as stored and sent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Dose {
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub source_dosage_option_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub source_dosage_option_portable_id: Option<String>,
    #[schemars(with = "PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    #[schemars(range(min = 1))]
    pub max_daily_doses: Option<i64>,
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub min_hours_between_doses: Option<Dec>,
}

impl Dose {
    /// A dose before any attributes are applied; `settle` requires the
    /// medication, amount and unit, so these values never reach storage.
    pub fn placeholder() -> Dose {
        Dose {
            medication_id: 0,
            medication_portable_id: String::new(),
            source_dosage_option_id: None,
            source_dosage_option_portable_id: None,
            dose_amount: Dec::ZERO,
            dose_unit: DoseUnit::Tablet,
            dose_cycle: None,
            max_daily_doses: None,
            min_hours_between_doses: None,
        }
    }
}

/// The submitted dose attributes: absent (`None`), null (`Some(None)`) or a value.
#[derive(Debug, Default)]
pub struct DoseAttributes {
    pub medication_id: Option<Option<ResourceId>>,
    pub source_dosage_option_id: Option<Option<ResourceId>>,
    pub dose_amount: Option<Option<PositiveDecimal>>,
    pub dose_unit: Option<Option<DoseUnit>>,
    pub dose_cycle: Option<Option<DoseCycle>>,
    pub max_daily_doses: Option<Option<i64>>,
    pub min_hours_between_doses: Option<Option<NonNegativeDecimal>>,
}

/// How many doses a dose cycle allows: at least 1.
pub type DailyDoses = AtLeast<1>;
/// A schedule's or direct assignment's notes: at most 2000 characters.
pub type SourceNotes = Text<2000>;

// What every stored source begins with: itself, its person and its dose.
// Flattened into the row (no description of its own).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceHead {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    #[serde(flatten)]
    pub dose: Dose,
}

impl SourceHead {
    /// A new source of the person: a new portable id, no dose yet.
    pub fn new(person_id: i64, person_portable_id: String) -> SourceHead {
        SourceHead {
            id: 0,
            portable_id: crate::db::new_portable_id(),
            person_id,
            person_portable_id,
            dose: Dose::placeholder(),
        }
    }

    /// The same source (id, portable id, person) with no dose yet: what a
    /// replace starts from.
    pub fn without_dose(&self) -> SourceHead {
        SourceHead {
            dose: Dose::placeholder(),
            ..self.clone()
        }
    }
}

// What every stored source ends with: when it was retired, created and
// last changed, and its version (not sent). Flattened into the row.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceStamps {
    pub retired_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

impl SourceStamps {
    /// A new source's: created now, version 1.
    pub fn new() -> SourceStamps {
        let now = Timestamp::now();
        SourceStamps {
            retired_at: None,
            created_at: now.clone(),
            updated_at: now,
            lock_version: 1,
        }
    }
}

impl Default for SourceStamps {
    fn default() -> SourceStamps {
        SourceStamps::new()
    }
}

/// The attributes both kinds take, as `source_attributes!` declares them.
pub trait SourceAttributes {
    fn take_person_id(&mut self) -> Option<Option<ResourceId>>;
    fn take_notes(&mut self) -> Option<Option<SourceNotes>>;
    /// Takes out the attributes the dose rules settle.
    fn take_dose(&mut self) -> DoseAttributes;
}

/// Declares a kind's attribute struct: the attributes both kinds take
/// (person, medication, dosage option, dose, notes) around the kind's own,
/// in the order the kind has always declared them (`after_unit` after
/// dose_unit, `own` after min_hours_between_doses, notes last), and its
/// `SourceAttributes`.
macro_rules! source_attributes {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            after_unit { $($after_unit:tt)* }
            own { $($own:tt)* }
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            /// The person, numeric or portable id; cannot change after creation
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "crate::domain::ResourceId")]
            pub person_id: Option<Option<$crate::domain::ResourceId>>,
            /// A medication of the household, numeric or portable id
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "crate::domain::ResourceId")]
            pub medication_id: Option<Option<$crate::domain::ResourceId>>,
            /// A dosage option of the medication; its defaults fill the dose attributes the body leaves out
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "Option<crate::domain::ResourceId>")]
            pub source_dosage_option_id: Option<Option<$crate::domain::ResourceId>>,
            /// Defaults to the dosage option's amount, else the medication's dose_amount
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "crate::decimal::PositiveDecimal")]
            pub dose_amount: Option<Option<$crate::decimal::PositiveDecimal>>,
            /// Defaults to the dosage option's unit, else the medication's dose_unit
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "crate::medicine::vocab::DoseUnit")]
            pub dose_unit: Option<Option<$crate::medicine::vocab::DoseUnit>>,
            $($after_unit)*
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "crate::medicine::vocab::DoseCycle", extend("default" = "daily"))]
            pub dose_cycle: Option<Option<$crate::medicine::vocab::DoseCycle>>,
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "Option<crate::care::sources::model::DailyDoses>")]
            pub max_daily_doses: Option<Option<$crate::care::sources::model::DailyDoses>>,
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "Option<crate::decimal::NonNegativeDecimal>")]
            pub min_hours_between_doses: Option<Option<$crate::decimal::NonNegativeDecimal>>,
            $($own)*
            #[serde(default, deserialize_with = "crate::domain::present")]
            #[schemars(with = "Option<crate::care::sources::model::SourceNotes>")]
            pub notes: Option<Option<$crate::care::sources::model::SourceNotes>>,
        }

        impl $crate::care::sources::model::SourceAttributes for $name {
            fn take_person_id(&mut self) -> Option<Option<$crate::domain::ResourceId>> {
                self.person_id.take()
            }
            fn take_notes(&mut self) -> Option<Option<$crate::care::sources::model::SourceNotes>> {
                self.notes.take()
            }
            fn take_dose(&mut self) -> $crate::care::sources::model::DoseAttributes {
                $crate::care::sources::model::DoseAttributes {
                    medication_id: self.medication_id.take(),
                    source_dosage_option_id: self.source_dosage_option_id.take(),
                    dose_amount: self.dose_amount.take(),
                    dose_unit: self.dose_unit.take(),
                    dose_cycle: self.dose_cycle.take(),
                    max_daily_doses: self
                        .max_daily_doses
                        .take()
                        .map(|n| n.map($crate::domain::AtLeast::get)),
                    min_hours_between_doses: self.min_hours_between_doses.take(),
                }
            }
        }
    };
}
pub(crate) use source_attributes;

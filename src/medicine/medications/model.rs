//! Medication API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decimal::{Dec, NonNegativeDecimal, PositiveDecimal};
use crate::domain::{Digits, Name, ResourceId, Text, Timestamp, Versioned, etag, present};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::medicine::vocab::{
    AdjustmentReason, ConceptClass, DoseUnit, ReorderStatus, ScheduleType,
};

/// A medication's name: not blank, at most 200 characters.
pub type MedicationName = Name<200>;
/// A barcode: GTIN-13 or GTIN-14 digits.
pub type Barcode = Digits<13, 14>;
/// A dm+d concept code.
pub type DmdCode = Digits<6, 18>;

/// A medication as stored, before the derived fields are added.
#[derive(Debug, Clone)]
pub struct MedicationRow {
    pub id: i64,
    pub portable_id: String,
    pub location_id: Option<i64>,
    pub location_portable_id: Option<String>,
    pub name: String,
    pub friendly_name: Option<String>,
    pub category: Option<String>,
    pub description: Option<String>,
    pub dose_amount: Option<Dec>,
    pub dose_unit: Option<DoseUnit>,
    pub default_schedule_type: Option<ScheduleType>,
    pub current_supply: Dec,
    pub reorder_threshold: Option<Dec>,
    pub barcode: Option<String>,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<ConceptClass>,
    pub reorder: Reorder,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a recorded dose needs of the medication it was taken from: which
/// one it is, and the stock the dose is deducted from.
#[derive(Debug, Clone, PartialEq)]
pub struct MedicationStock {
    pub id: i64,
    pub portable_id: String,
    pub dose_unit: Option<DoseUnit>,
    pub current_supply: Dec,
}

impl MedicationRow {
    /// A new medication with every field at its default, made `now`.
    pub fn new(now: Timestamp) -> MedicationRow {
        MedicationRow {
            id: 0,
            portable_id: String::new(),
            location_id: None,
            location_portable_id: None,
            name: String::new(),
            friendly_name: None,
            category: None,
            description: None,
            dose_amount: None,
            dose_unit: None,
            default_schedule_type: None,
            current_supply: Dec::ZERO,
            reorder_threshold: None,
            barcode: None,
            dmd_code: None,
            dmd_system: None,
            dmd_concept_class: None,
            reorder: Reorder::default(),
            lock_version: 1,
            created_at: now.clone(),
            updated_at: now,
        }
    }
}

// Where the latest reorder stands (flattened into a medication).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Reorder {
    #[serde(rename = "reorder_status")]
    pub status: Option<ReorderStatus>,
    #[serde(rename = "reorder_supplier")]
    pub supplier: Option<String>,
    #[serde(rename = "reorder_quantity")]
    pub quantity: Option<Dec>,
    #[serde(rename = "reorder_expected_on")]
    #[schemars(with = "Option<openapi::Date>")]
    pub expected_on: Option<String>,
    #[serde(rename = "reorder_ordered_at")]
    pub ordered_at: Option<Timestamp>,
    #[serde(rename = "reorder_received_at")]
    pub received_at: Option<Timestamp>,
}

// Every key is always present, nothing else.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Medication {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub location_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub location_portable_id: Option<String>,
    #[schemars(length(min = 1))]
    pub name: String,
    pub friendly_name: Option<String>,
    /// friendly_name when set, else name
    #[schemars(length(min = 1))]
    pub display_name: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub dose_amount: Option<Dec>,
    pub dose_unit: Option<DoseUnit>,
    pub default_schedule_type: Option<ScheduleType>,
    pub current_supply: Dec,
    pub reorder_threshold: Option<Dec>,
    #[schemars(with = "Option<Barcode>")]
    pub barcode: Option<String>,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<ConceptClass>,
    #[serde(flatten)]
    pub reorder: Reorder,
    #[serde(flatten)]
    pub stock: crate::medicine::forecast::StockStatus,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Medication {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Medication attributes; absent fields are left alone, null clears.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MedicationAttributes {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<ResourceId>")]
    pub location_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "MedicationName")]
    pub name: Option<Option<MedicationName>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<200>>")]
    pub friendly_name: Option<Option<Text<200>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<100>>")]
    pub category: Option<Option<Text<100>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<2000>>")]
    pub description: Option<Option<Text<2000>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<PositiveDecimal>")]
    pub dose_amount: Option<Option<PositiveDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<DoseUnit>")]
    pub dose_unit: Option<Option<DoseUnit>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<ScheduleType>")]
    pub default_schedule_type: Option<Option<ScheduleType>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "NonNegativeDecimal")]
    pub current_supply: Option<Option<NonNegativeDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<NonNegativeDecimal>")]
    pub reorder_threshold: Option<Option<NonNegativeDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Barcode>")]
    pub barcode: Option<Option<Barcode>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<DmdCode>")]
    pub dmd_code: Option<Option<DmdCode>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<200>>")]
    pub dmd_system: Option<Option<Text<200>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<ConceptClass>")]
    pub dmd_concept_class: Option<Option<ConceptClass>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MedicationUpdateRequest")]
pub struct MedicationBody {
    pub medication: MedicationAttributes,
}

/// A replace carries every writable attribute.
impl Whole for MedicationBody {
    const KEY: &'static str = "medication";
    const FIELDS: &'static [&'static str] = &[
        "location_id",
        "name",
        "friendly_name",
        "category",
        "description",
        "dose_amount",
        "dose_unit",
        "default_schedule_type",
        "reorder_threshold",
        "barcode",
        "dmd_code",
        "dmd_system",
        "dmd_concept_class",
    ];
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct Adjustment {
    // The counted stock, which becomes current_supply.
    pub quantity: NonNegativeDecimal,
    pub reason: AdjustmentReason,
    #[serde(default)]
    pub note: Option<Text<1000>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InventoryAdjustmentRequest")]
pub struct AdjustmentBody {
    pub adjustment: Adjustment,
}

/// The longest supplier name.
pub const MAX_SUPPLIER: usize = 200;

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct OrderDetails {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Text<MAX_SUPPLIER>>")]
    pub supplier: Option<Option<Text<MAX_SUPPLIER>>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<PositiveDecimal>")]
    pub quantity: Option<Option<PositiveDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::Date>")]
    pub expected_on: Option<Option<Date>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "OrderDetailsRequest")]
pub struct OrderBody {
    #[serde(default)]
    pub order_details: OrderDetails,
}

// A receipt's details: only the quantity is documented; an order's other
// fields are read so that the rule can refuse them by name.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ReceiptDetails {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<PositiveDecimal>")]
    pub quantity: Option<Option<PositiveDecimal>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub supplier: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub expected_on: Option<Option<Date>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ReceiptRequest")]
pub struct ReceiptBody {
    #[serde(default)]
    pub order_details: ReceiptDetails,
}

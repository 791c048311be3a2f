//! The closed vocabularies of medicines (DESIGN.md's decisions): each is a
//! string enum on the wire and in SQLite, with its list for the OpenAPI
//! document and the capability document.

macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [&'static str] = &[$($text),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            pub fn schema() -> serde_json::Value {
                serde_json::json!({"type": "string", "enum": Self::ALL})
            }
        }

        // Inline, as the hand-written schemas always wrote a vocabulary.
        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": Self::ALL})
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                $name::parse(text).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(format!("unknown {} {text}", stringify!($name)).into())
                })
            }
        }
    };
}

/// Every closed vocabulary of the API is declared through this macro, in
/// its own resource's model.
pub(crate) use vocabulary;

vocabulary!(
    /// Units a dose or a stock quantity is counted in.
    DoseUnit {
        Tablet => "tablet",
        Capsule => "capsule",
        Gummy => "gummy",
        Mg => "mg",
        Ml => "ml",
        G => "g",
        Mcg => "mcg",
        Iu => "IU",
        Spray => "spray",
        Drop => "drop",
        Sachet => "sachet",
        Pad => "pad",
    }
);

vocabulary!(
    /// How a schedule repeats.
    ScheduleType {
        Daily => "daily",
        MultipleDaily => "multiple_daily",
        Weekly => "weekly",
        SpecificDates => "specific_dates",
        Prn => "prn",
        Tapering => "tapering",
        EveryOtherDay => "every_other_day",
    }
);

vocabulary!(
    /// The window a dose limit counts over.
    DoseCycle {
        Daily => "daily",
        Weekly => "weekly",
        Monthly => "monthly",
    }
);

vocabulary!(
    /// dm+d concept classes: generic (virtual) or branded (actual) product.
    ConceptClass {
        Vmp => "VMP",
        Amp => "AMP",
    }
);

vocabulary!(
    /// Why stock left the cupboard other than as a dose.
    StockRemovalReason {
        Expired => "expired",
        Damaged => "damaged",
        Lost => "lost",
        Disposed => "disposed",
        ReturnedToPharmacy => "returned_to_pharmacy",
        Other => "other",
    }
);

vocabulary!(
    /// Why a stock count was corrected.
    AdjustmentReason {
        StockCount => "stock_count",
        Correction => "correction",
        Found => "found",
        Other => "other",
    }
);

vocabulary!(
    /// What a take's stock deduction warns of (a take's warning codes
    /// include these).
    StockWarningCode {
        NotDeducted => "stock_not_deducted",
        RanOut => "stock_ran_out",
    }
);

vocabulary!(
    /// Where a reorder stands.
    ReorderStatus {
        Ordered => "ordered",
        Received => "received",
    }
);

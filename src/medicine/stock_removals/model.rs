//! Stock removal API shapes.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::decimal::{Dec, PositiveDecimal};
use crate::domain::{ResourceId, Text, Timestamp};
use crate::http::openapi;
use crate::medicine::vocab::StockRemovalReason;

/// The longest note a removal keeps, in characters.
pub const MAX_NOTE: usize = 1000;

// A saved stock removal, exactly as it is returned (also on a replay).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StockRemoval {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub dosage_option_id: Option<i64>,
    pub quantity: Dec,
    pub reason: StockRemovalReason,
    #[schemars(extend("maxLength" = MAX_NOTE))]
    pub note: Option<String>,
    #[schemars(with = "SubmissionId")]
    pub submission_id: String,
    pub supply_before: Dec,
    pub supply_after: Dec,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub actor_membership_id: Option<i64>,
    pub created_at: Timestamp,
}

/// The client's id for one intended removal: a UUID, kept in its
/// lower-case hyphenated form so that any spelling of it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionId(pub String);

impl SubmissionId {
    pub fn parse(text: &str) -> Option<SubmissionId> {
        uuid::Uuid::parse_str(text)
            .ok()
            .map(|u| SubmissionId(u.hyphenated().to_string()))
    }
}

impl JsonSchema for SubmissionId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SubmissionId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "uuid"})
    }
}

impl<'de> Deserialize<'de> for SubmissionId {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        const EXPECTED: &str =
            "must be a UUID string, kept the same when the same removal is retried";
        // A missing or non-string value keeps serde's own message ("missing field ...").
        let text = String::deserialize(de)?;
        SubmissionId::parse(&text).ok_or_else(|| serde::de::Error::custom(EXPECTED))
    }
}

/// `dosage_id`: a dosage option by its numeric id (a numeric string such
/// as "12" or a JSON integer) or its portable id (a UUID string, which is
/// all an offline client holds from a snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DosageRef(pub ResourceId);

impl<'de> Deserialize<'de> for DosageRef {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        const EXPECTED: &str =
            "must be the numeric id (such as \"12\") or the portable id of a dosage option";
        let id = match Raw::deserialize(de).map_err(|_| serde::de::Error::custom(EXPECTED))? {
            Raw::Number(n) => Some(ResourceId::Numeric(n)),
            // One spelling per id, as in paths: not "01", "+1" or a braced UUID.
            Raw::Text(text) => ResourceId::parse(&text),
        };
        match id {
            Some(ResourceId::Numeric(n)) if n < 1 => Err(serde::de::Error::custom(EXPECTED)),
            Some(id) => Ok(DosageRef(id)),
            None => Err(serde::de::Error::custom(EXPECTED)),
        }
    }
}

impl JsonSchema for DosageRef {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "DosageRef".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [
            {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            {"type": "string", "pattern": "^[1-9][0-9]*$"},
            generator.subschema_for::<openapi::PortableId>(),
        ]})
    }
}

/// A reason read as a string, so that null, a number or an unknown word
/// are all reported as a 422 naming `reason`, with the supported values.
fn reason<'de, D: serde::Deserializer<'de>>(de: D) -> Result<StockRemovalReason, D::Error> {
    let expected = || format!("must be one of {}", StockRemovalReason::ALL.join(", "));
    let text = String::deserialize(de).map_err(|_| serde::de::Error::custom(expected()))?;
    StockRemovalReason::parse(&text).ok_or_else(|| serde::de::Error::custom(expected()))
}

// What the client sends under `stock_removal`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct NewStockRemoval {
    // A removal takes stock away: its quantity is greater than zero.
    pub quantity: PositiveDecimal,
    #[serde(deserialize_with = "reason")]
    #[schemars(with = "StockRemovalReason")]
    pub reason: StockRemovalReason,
    /// Chosen by the client once per intended removal and kept for every retry of it
    pub submission_id: SubmissionId,
    #[serde(default)]
    pub note: Option<Text<{ MAX_NOTE }>>,
    /// A dosage option of this medication that tracks its own stock (its current_supply is not null), by numeric id or portable id; that stock is decremented instead of the medication's
    #[serde(default)]
    pub dosage_id: Option<DosageRef>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "StockRemovalCreateRequest")]
pub struct StockRemovalBody {
    pub stock_removal: NewStockRemoval,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dosage_refs_and_submission_ids() {
        let d = |s: &str| serde_json::from_str::<DosageRef>(s);
        assert_eq!(d("12").unwrap(), DosageRef(ResourceId::Numeric(12)));
        assert_eq!(d("\"12\"").unwrap(), DosageRef(ResourceId::Numeric(12)));
        assert_eq!(
            d("\"0192A5B0-0000-7000-8000-00000000000A\"").unwrap(),
            DosageRef(ResourceId::Portable(
                "0192a5b0-0000-7000-8000-00000000000a".into()
            ))
        );
        for bad in [
            "0", "-1", "\"0\"", "\"+3\"", "\"03\"", "\"abc\"", "1.5", "true", "\"\"",
        ] {
            assert!(d(bad).is_err(), "{bad} accepted");
        }
        let upper = SubmissionId::parse("0192A5B0-0000-7000-8000-00000000000A").unwrap();
        assert_eq!(upper.0, "0192a5b0-0000-7000-8000-00000000000a");
        assert!(SubmissionId::parse("not-a-uuid").is_none());
    }
}

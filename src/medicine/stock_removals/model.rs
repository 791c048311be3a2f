//! Stock removal API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::decimal::{self, Dec};
use crate::domain::ResourceId;
use crate::http::openapi::nullable;
use crate::medicine::vocab::StockRemovalReason;

/// A saved stock removal, exactly as it is returned (also on a replay).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StockRemoval {
    pub id: i64,
    pub portable_id: String,
    pub medication_id: i64,
    pub medication_portable_id: String,
    pub dosage_option_id: Option<i64>,
    pub quantity: Dec,
    pub reason: StockRemovalReason,
    pub note: Option<String>,
    pub submission_id: String,
    pub supply_before: Dec,
    pub supply_after: Dec,
    pub actor_membership_id: Option<i64>,
    pub created_at: String,
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

/// A reason read as a string, so that null, a number or an unknown word
/// are all reported as a 422 naming `reason`, with the supported values.
fn reason<'de, D: serde::Deserializer<'de>>(de: D) -> Result<StockRemovalReason, D::Error> {
    let expected = || format!("must be one of {}", StockRemovalReason::ALL.join(", "));
    let text = String::deserialize(de).map_err(|_| serde::de::Error::custom(expected()))?;
    StockRemovalReason::parse(&text).ok_or_else(|| serde::de::Error::custom(expected()))
}

/// What the client sends under `stock_removal`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewStockRemoval {
    pub quantity: Dec,
    #[serde(deserialize_with = "reason")]
    pub reason: StockRemovalReason,
    pub submission_id: SubmissionId,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub dosage_id: Option<DosageRef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StockRemovalBody {
    pub stock_removal: NewStockRemoval,
}

pub fn stock_removal_schema() -> Value {
    let props = json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "medication_id": {"$ref": "#/components/schemas/NumericId"},
        "medication_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "dosage_option_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "quantity": decimal::schema(),
        "reason": StockRemovalReason::schema(),
        "note": nullable(json!({"type": "string", "maxLength": 1000})),
        "submission_id": {"type": "string", "format": "uuid"},
        "supply_before": decimal::schema(),
        "supply_after": decimal::schema(),
        "actor_membership_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn new_stock_removal_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["quantity", "reason", "submission_id"],
        "properties": {
            "quantity": decimal::positive_schema(),
            "reason": StockRemovalReason::schema(),
            "submission_id": {
                "type": "string", "format": "uuid",
                "description": "Chosen by the client once per intended removal and kept for every retry of it",
            },
            "note": {"type": ["string", "null"], "maxLength": 1000},
            "dosage_id": {
                "description": "A dosage option of this medication that tracks its own stock (its current_supply is not null), by numeric id or portable id; that stock is decremented instead of the medication's",
                "anyOf": [
                    {"type": "integer", "minimum": 1, "maximum": i64::MAX},
                    {"type": "string", "pattern": "^[1-9][0-9]*$"},
                    {"$ref": "#/components/schemas/PortableId"},
                    {"type": "null"},
                ],
            },
        },
    })
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

//! How a request names a record: its numeric id or its portable id.

/// A `{id}` that names a record by its numeric id or its portable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceId {
    Numeric(i64),
    Portable(String),
}

impl ResourceId {
    /// Only the canonical spellings name a record: `12` (not `012`, `+12`
    /// or `12.0`) and a hyphenated UUID (either case; not braced, URN or
    /// unhyphenated), so one record has one address.
    pub fn parse(text: &str) -> Option<ResourceId> {
        if let Some(n) = numeric_id(text) {
            return Some(ResourceId::Numeric(n));
        }
        if text.len() != 36 {
            return None;
        }
        uuid::Uuid::try_parse(text)
            .ok()
            .map(|u| ResourceId::Portable(u.hyphenated().to_string()))
    }

    /// SQL-ready parts: the numeric id, or else the portable id, for
    /// `x.id = coalesce(?2, (SELECT id FROM t WHERE household_id = ?1 AND portable_id = ?3))`.
    /// (SQLite answered `x.id = ?2 OR x.portable_id = ?3` by looking up
    /// both indexes and merging the two, several thousand instructions
    /// more; this is one lookup by id.)
    pub fn sql_parts(&self) -> (Option<i64>, Option<&str>) {
        match self {
            ResourceId::Numeric(n) => (Some(*n), None),
            ResourceId::Portable(p) => (None, Some(p.as_str())),
        }
    }
}

/// In a body, a reference is a numeric id (number or numeric string) or a
/// portable id (UUID string).
impl<'de> serde::Deserialize<'de> for ResourceId {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        struct IdVisitor;
        const EXPECTED: &str = "must be a numeric id or a portable id (UUID)";

        impl serde::de::Visitor<'_> for IdVisitor {
            type Value = ResourceId;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a numeric id or a portable id (UUID)")
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<ResourceId, E> {
                i64::try_from(v)
                    .ok()
                    .filter(|n| *n >= 1)
                    .map(ResourceId::Numeric)
                    .ok_or_else(|| E::custom(EXPECTED))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<ResourceId, E> {
                if v >= 1 {
                    Ok(ResourceId::Numeric(v))
                } else {
                    Err(E::custom(EXPECTED))
                }
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<ResourceId, E> {
                ResourceId::parse(v).ok_or_else(|| E::custom(EXPECTED))
            }

            fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<ResourceId, E> {
                Err(E::custom(EXPECTED))
            }

            fn visit_bool<E: serde::de::Error>(
                self,
                _: bool,
            ) -> std::result::Result<ResourceId, E> {
                Err(E::custom(EXPECTED))
            }
        }

        de.deserialize_any(IdVisitor)
    }
}

/// A numeric id written canonically: digits only, no leading zero, from 1
/// to `i64::MAX`. Anything else (`01`, `+1`, `1.0`, ` 1`) is no id.
pub fn numeric_id(text: &str) -> Option<i64> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

/// The JSON schema of a body reference: numeric id, numeric string or UUID,
/// as `ResourceId`'s `Deserialize` reads it.
impl schemars::JsonSchema for ResourceId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ResourceReference".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [
            {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            {"type": "string", "pattern": "^[1-9][0-9]*$"},
            {"type": "string", "format": "uuid"},
        ]})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_ids() {
        assert_eq!(ResourceId::parse("12"), Some(ResourceId::Numeric(12)));
        assert_eq!(ResourceId::parse("0"), None);
        for not_canonical in ["12.0", "12.5", "012", "+12", " 12", "-1", "1e1"] {
            assert_eq!(ResourceId::parse(not_canonical), None, "{not_canonical}");
        }
        let upper = "0192A5B0-0000-7000-8000-000000000000";
        assert_eq!(
            ResourceId::parse(upper),
            Some(ResourceId::Portable(upper.to_ascii_lowercase()))
        );
        for not_canonical in [
            "0192a5b000007000800000000000000",
            "{0192a5b0-0000-7000-8000-000000000000}",
            "urn:uuid:0192a5b0-0000-7000-8000-000000000000",
        ] {
            assert_eq!(ResourceId::parse(not_canonical), None, "{not_canonical}");
        }
        assert!(matches!(
            ResourceId::parse("0192a5b0-0000-7000-8000-000000000000"),
            Some(ResourceId::Portable(_))
        ));
        assert_eq!(ResourceId::parse("abc"), None);
    }
}

//! Streaming reader of openFDA drug-label files (`{"meta": ..., "results":
//! [label, ...]}`, as https://open.fda.gov/apis/drug/label/download/ serves
//! them). A bulk file is hundreds of megabytes: labels are parsed one at a
//! time from the reader and handed on, so only one label is held at once.

use std::fmt;
use std::io::Read;

use serde::Deserializer as _;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::model::{Evidence, Label, OPENFDA_SOURCE};
use crate::reports::names;

/// Reads every label of the file, calling `each` with each one in order.
/// `each` may stop the reading by returning an error message.
pub fn read_labels<R: Read>(
    reader: R,
    each: &mut dyn FnMut(Label) -> Result<(), String>,
) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    (&mut de)
        .deserialize_map(FileVisitor { each })
        .map_err(|e| format!("not an openFDA drug-label file: {e}"))?;
    de.end()
        .map_err(|e| format!("not an openFDA drug-label file: {e}"))
}

struct FileVisitor<'a> {
    each: &'a mut dyn FnMut(Label) -> Result<(), String>,
}

impl<'de> Visitor<'de> for FileVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with a results array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let each = self.each;
        let mut seen_results = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "results" {
                map.next_value_seed(Results { each: &mut *each })?;
                seen_results = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if seen_results {
            Ok(())
        } else {
            Err(serde::de::Error::missing_field("results"))
        }
    }
}

struct Results<'a> {
    each: &'a mut dyn FnMut(Label) -> Result<(), String>,
}

impl<'de> DeserializeSeed<'de> for Results<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Results<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of drug labels")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(label) = seq.next_element::<Label>()? {
            (self.each)(label).map_err(serde::de::Error::custom)?;
        }
        Ok(())
    }
}

/// The label's interaction evidence, or `None` when it has no interaction
/// text or no set id to keep it by.
pub fn evidence_of(label: Label) -> Option<Evidence> {
    let text = label
        .drug_interactions
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let record_id = label.set_id.or(label.id)?.trim().to_string();
    if text.is_empty() || record_id.is_empty() || !record_id.chars().all(is_id_char) {
        return None;
    }
    let mut ingredients: Vec<String> = Vec::new();
    for name in label
        .openfda
        .generic_name
        .iter()
        .chain(&label.openfda.substance_name)
    {
        push_unique(&mut ingredients, name);
    }
    let mut products: Vec<String> = Vec::new();
    for name in &label.openfda.brand_name {
        push_unique(&mut products, name);
    }
    Some(Evidence {
        source_name: OPENFDA_SOURCE.to_string(),
        url: format!("https://api.fda.gov/drug/label.json?search=set_id:{record_id}"),
        record_id,
        version: label
            .version
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()),
        effective_date: label.effective_time.as_deref().and_then(iso_date),
        product_names: products,
        ingredient_names: ingredients,
        evidence_text: text,
    })
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// Keeps names in the source's spelling, once each (compared normalised).
fn push_unique(list: &mut Vec<String>, name: &str) {
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    let key = names::normalise(&name);
    if key.is_empty() || list.iter().any(|n| names::normalise(n) == key) {
        return;
    }
    list.push(name);
}

/// openFDA dates are `YYYYMMDD`.
fn iso_date(text: &str) -> Option<String> {
    let text = text.trim();
    if text.len() != 8 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let date = format!("{}-{}-{}", &text[..4], &text[4..6], &text[6..]);
    date.parse::<jiff::civil::Date>()
        .ok()
        .map(|d| d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_stream_from_the_results_array() {
        let file = br#"{"meta": {"results": {"total": 2}}, "results": [
            {"set_id": "abc-1", "version": "3", "effective_time": "20240115",
             "openfda": {"generic_name": ["SERTRALINE HYDROCHLORIDE"], "brand_name": ["Zoloft"]},
             "drug_interactions": ["7 DRUG INTERACTIONS Warfarin: monitor INR."],
             "boxed_warning": ["ignored"]},
            {"set_id": "abc-2", "openfda": {}}
        ]}"#;
        let mut seen = Vec::new();
        read_labels(&file[..], &mut |label| {
            seen.push(label);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 2);
        let mut labels = seen.into_iter();
        let evidence = evidence_of(labels.next().unwrap()).unwrap();
        assert_eq!(evidence.record_id, "abc-1");
        assert_eq!(evidence.effective_date.as_deref(), Some("2024-01-15"));
        assert_eq!(evidence.ingredient_names, vec!["SERTRALINE HYDROCHLORIDE"]);
        assert_eq!(
            evidence.url,
            "https://api.fda.gov/drug/label.json?search=set_id:abc-1"
        );
        assert!(evidence_of(labels.next().unwrap()).is_none());
    }

    #[test]
    fn a_file_without_results_is_refused() {
        assert!(read_labels(&b"{\"meta\": {}}"[..], &mut |_| Ok(())).is_err());
        assert!(read_labels(&b"[1, 2]"[..], &mut |_| Ok(())).is_err());
    }
}

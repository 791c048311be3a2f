//! The review pass: pairs each person's active medicines and makes one
//! prompt per (person, pair, evidence record) where the evidence of one
//! medicine names the other. It runs in the background (after an evidence
//! import, and when a person's schedules, assignments or medicines change),
//! never inside a request. A prompt once made is never made again nor
//! re-opened: a later pass leaves it, and its review, as they are.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use rusqlite::Connection;

use super::model::{EvidenceSnapshot, Priority};
use super::store::{self, ActiveMedicine, NewPrompt};
use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::reports::evidence::store as evidence_store;
use crate::reports::names;

/// The most evidence records one medicine is matched with in a pass (the
/// newest labels first): a common ingredient has hundreds of labels in a
/// bulk file, and the pass must stay bounded.
const MAX_RECORDS_PER_MEDICINE: usize = 200;

/// Words in a passage that make the pair a high or medium priority.
const HIGH: &[&str] = &[
    "contraindicated",
    "fatal",
    "life-threatening",
    "life threatening",
    "do not use",
    "must not",
    "should not be used",
    "serious",
    "avoid",
];
const MEDIUM: &[&str] = &[
    "monitor", "caution", "increase", "decrease", "adjust", "risk", "reduce",
];

/// The priority the wording of a passage suggests.
pub fn priority_of(excerpt: &str) -> Priority {
    let lower = excerpt.to_lowercase();
    if HIGH.iter().any(|w| lower.contains(w)) {
        Priority::High
    } else if MEDIUM.iter().any(|w| lower.contains(w)) {
        Priority::Medium
    } else {
        Priority::Low
    }
}

/// A medicine as the pass matches it.
struct Medicine {
    id: i64,
    display_name: String,
    /// Its own normalised names (name and friendly name).
    names: BTreeSet<String>,
    /// Evidence records that describe it.
    records: Vec<i64>,
    /// Names the other medicines' evidence may call it by: its own names
    /// and the ingredients of the records that describe it.
    terms: Vec<String>,
}

fn medicine(conn: &Connection, active: ActiveMedicine) -> Result<Medicine> {
    let mut own: BTreeSet<String> = BTreeSet::new();
    for name in std::iter::once(&active.name).chain(active.friendly_name.as_ref()) {
        let n = names::normalise(name);
        if n.len() >= 3 {
            own.insert(n);
        }
    }
    let own_list: Vec<String> = own.iter().cloned().collect();
    // A brand name finds its labels, whose ingredients find the generic ones.
    let mut terms: BTreeSet<String> = own.clone();
    for id in evidence_store::named(conn, &own_list)? {
        for (name, kind) in evidence_store::names_of(conn, id)? {
            if kind == "ingredient" {
                terms.insert(name);
            }
        }
    }
    let all: Vec<String> = terms.iter().cloned().collect();
    let mut records = evidence_store::named(conn, &all)?;
    // Newest record ids first: later imports are the later labels.
    records.reverse();
    records.truncate(MAX_RECORDS_PER_MEDICINE);
    let mut terms: Vec<String> = terms.into_iter().collect();
    // Longest first, so "insulin glargine" wins over "insulin".
    terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
    Ok(Medicine {
        id: active.id,
        display_name: active.name,
        names: own,
        records,
        terms,
    })
}

/// The household's date today, for "a schedule that has ended".
fn today_in(time_zone: &str) -> String {
    let zone = jiff::tz::TimeZone::get(time_zone).unwrap_or(jiff::tz::TimeZone::UTC);
    jiff::Timestamp::now()
        .to_zoned_datetime(zone)
        .date()
        .to_string()
}

/// Runs the pass for one person: the number of prompts made.
pub fn run_for_person(conn: &WriteTx, person_id: i64) -> Result<usize> {
    let Some((household_id, time_zone)) = store::person_household(conn, person_id)? else {
        return Ok(0);
    };
    let active = store::active_medicines(conn, person_id, &today_in(&time_zone))?;
    if active.len() < 2 {
        return Ok(0);
    }
    let medicines = active
        .into_iter()
        .map(|a| medicine(conn, a))
        .collect::<Result<Vec<_>>>()?;
    let now = Timestamp::now();
    let mut texts: HashMap<i64, Option<(evidence_store::EvidenceRow, String)>> = HashMap::new();
    let mut made = 0;
    for subject in &medicines {
        for other in medicines.iter().filter(|m| m.id != subject.id) {
            for &record in &subject.records {
                // A record that describes both (a combined product) is not
                // evidence about taking them together.
                if other.records.contains(&record) {
                    continue;
                }
                if store::exists(conn, person_id, (subject.id, other.id), record)? {
                    continue;
                }
                let loaded = match texts.entry(record) {
                    Entry::Occupied(known) => known.into_mut(),
                    Entry::Vacant(slot) => {
                        let row = evidence_store::get(conn, record)?.map(|row| {
                            let normal = names::normalise_text(&row.evidence.evidence_text);
                            (row, normal)
                        });
                        slot.insert(row)
                    }
                };
                let Some((row, normal)) = loaded else {
                    continue;
                };
                let Some(term) = other
                    .terms
                    .iter()
                    .find(|t| !subject.names.contains(*t) && names::names(normal, t))
                else {
                    continue;
                };
                let excerpt = names::excerpt(&row.evidence.evidence_text, term);
                let snapshot = EvidenceSnapshot {
                    source_name: row.evidence.source_name.clone(),
                    record_id: row.evidence.record_id.clone(),
                    url: row.evidence.url.clone(),
                    version: row.evidence.version.clone(),
                    effective_date: row.evidence.effective_date.clone(),
                    product_names: row.evidence.product_names.clone(),
                    ingredient_names: row.evidence.ingredient_names.clone(),
                    medication_name: subject.display_name.clone(),
                    other_medication_name: other.display_name.clone(),
                    matched_term: term.clone(),
                    excerpt: excerpt.clone(),
                    captured_at: now.clone(),
                };
                let added = store::insert_once(
                    conn,
                    &NewPrompt {
                        household_id,
                        person_id,
                        medication_id: subject.id,
                        other_medication_id: other.id,
                        evidence_id: record,
                        evidence: &snapshot,
                        priority: priority_of(&excerpt),
                        now: &now,
                    },
                )?;
                if added {
                    made += 1;
                }
            }
        }
    }
    Ok(made)
}

/// Runs the pass for these people: the number of prompts made.
pub fn run_for_people(conn: &WriteTx, people: &[i64]) -> Result<usize> {
    let mut made = 0;
    for &person in people {
        made += run_for_person(conn, person)?;
    }
    Ok(made)
}

/// Runs the pass for everyone who could have a pair (after an import).
pub fn run_all(conn: &WriteTx) -> Result<usize> {
    let people: Vec<i64> = store::people_with_pairs(conn)?
        .into_iter()
        .map(|(_, person, _)| person)
        .collect();
    run_for_people(conn, &people)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording_sets_the_priority() {
        assert_eq!(
            priority_of("Concomitant use is contraindicated."),
            Priority::High
        );
        assert_eq!(priority_of("Monitor INR when starting."), Priority::Medium);
        assert_eq!(priority_of("Warfarin was studied."), Priority::Low);
    }
}

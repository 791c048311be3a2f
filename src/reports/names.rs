//! Medicine names as the review pass compares them: lower case, letters and
//! digits only, one space between words, without salt words ("sertraline
//! hydrochloride" is "sertraline"), strengths, units and dose forms
//! ("Sertraline 50mg tablets" is "sertraline"). A term is found in a text
//! only as whole words, so "aspirin" is not found in "aspirinate".

/// Words that name a salt, hydrate or ester rather than the medicine.
const SALTS: &[&str] = &[
    "hydrochloride",
    "hcl",
    "dihydrochloride",
    "hydrobromide",
    "sodium",
    "potassium",
    "calcium",
    "magnesium",
    "sulfate",
    "sulphate",
    "bisulfate",
    "maleate",
    "tartrate",
    "bitartrate",
    "succinate",
    "besylate",
    "besilate",
    "mesylate",
    "mesilate",
    "citrate",
    "acetate",
    "phosphate",
    "bromide",
    "chloride",
    "fumarate",
    "hemifumarate",
    "hyclate",
    "monohydrate",
    "dihydrate",
    "trihydrate",
    "hemihydrate",
    "anhydrous",
    "lactate",
    "gluconate",
    "nitrate",
    "oxalate",
    "propionate",
    "valerate",
    "dipropionate",
    "hydrate",
    "malate",
    "tosylate",
    "edisylate",
    "napsylate",
    "pamoate",
    "stearate",
    "carbonate",
    "salt",
    "base",
];

/// Units and dose forms that follow a name on a pack.
const FORM_WORDS: &[&str] = &[
    "mg",
    "mcg",
    "micrograms",
    "microgram",
    "g",
    "ml",
    "iu",
    "units",
    "unit",
    "tablet",
    "tablets",
    "tab",
    "tabs",
    "capsule",
    "capsules",
    "caps",
    "oral",
    "solution",
    "suspension",
    "syrup",
    "liquid",
    "cream",
    "ointment",
    "gel",
    "injection",
    "spray",
    "drops",
    "film",
    "coated",
    "modified",
    "release",
    "extended",
    "delayed",
    "chewable",
    "dispersible",
    "effervescent",
    "soluble",
    "gastro",
    "resistant",
    "sr",
    "mr",
    "xl",
    "er",
    "ec",
    "pack",
    "of",
    "caplet",
    "caplets",
];

/// The words of `text`: lower case, split on anything but letters and digits.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Whether a word is a strength ("500", "500mg", "0.5", "2x").
fn is_strength(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit())
}

/// A medicine or ingredient name in its compared form; empty when nothing
/// but salts, strengths and forms was left.
pub fn normalise(name: &str) -> String {
    words(name)
        .filter(|w| {
            !is_strength(w) && !SALTS.contains(&w.as_str()) && !FORM_WORDS.contains(&w.as_str())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A long text (a label section) in its compared form: every word kept
/// except salt words, so "warfarin sodium" is found as "warfarin".
pub fn normalise_text(text: &str) -> String {
    words(text)
        .filter(|w| !SALTS.contains(&w.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ingredients of a combined generic name ("ACETAMINOPHEN AND CODEINE
/// PHOSPHATE", "amlodipine, valsartan"), each normalised.
pub fn ingredients(generic_name: &str) -> Vec<String> {
    let lower = generic_name.to_lowercase();
    lower
        .split([',', ';', '/', '+'])
        .flat_map(|part| part.split(" and "))
        .map(normalise)
        .filter(|n| n.len() >= 3)
        .collect()
}

/// Whether the normalised `term` occurs in the normalised `text` as whole words.
pub fn names(text: &str, term: &str) -> bool {
    if term.len() < 3 {
        return false;
    }
    text.match_indices(term).any(|(at, _)| {
        let before = at == 0 || text.as_bytes()[at - 1] == b' ';
        let end = at + term.len();
        let after = end == text.len() || text.as_bytes()[end] == b' ';
        before && after
    })
}

/// The sentence of `text` (as the source wrote it) where `term` first
/// appears, at most about 500 characters; the start of the text when the
/// term cannot be placed.
pub fn excerpt(text: &str, term: &str) -> String {
    const BEFORE: usize = 200;
    const AFTER: usize = 300;
    let first_word = term.split(' ').next().unwrap_or(term);
    let lower = text.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; only trust the
    // position when it did not.
    let at = if lower.len() == text.len() {
        lower.find(first_word)
    } else {
        None
    };
    let at = at.unwrap_or(0);
    let mut start = text[..at].rfind(". ").map_or(0, |i| i + 2);
    if at - start > BEFORE {
        start = at - BEFORE;
    }
    let mut end = text[at..].find(". ").map_or(text.len(), |i| at + i + 1);
    if end - at > AFTER {
        end = at + AFTER;
    }
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let mut out = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if start > 0 {
        out.insert_str(0, "… ");
    }
    if end < text.len() && !out.ends_with('.') {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salts_strengths_and_forms_are_dropped() {
        assert_eq!(normalise("Sertraline Hydrochloride"), "sertraline");
        assert_eq!(normalise("Sertraline 50mg tablets"), "sertraline");
        assert_eq!(normalise("  WARFARIN   sodium "), "warfarin");
        assert_eq!(normalise("Co-codamol 30/500"), "co codamol");
        assert_eq!(normalise("500 mg"), "");
    }

    #[test]
    fn combined_generic_names_split_into_ingredients() {
        assert_eq!(
            ingredients("ACETAMINOPHEN AND CODEINE PHOSPHATE"),
            vec!["acetaminophen", "codeine"]
        );
        assert_eq!(
            ingredients("amlodipine, valsartan"),
            vec!["amlodipine", "valsartan"]
        );
    }

    #[test]
    fn terms_match_whole_words_only() {
        let text = normalise_text("Concomitant use with WARFARIN sodium increases bleeding.");
        assert!(names(&text, "warfarin"));
        assert!(!names(&text, "warf"));
        assert!(!names(&normalise_text("aspirinate"), "aspirin"));
        assert!(names(
            &normalise_text("Monoamine  Oxidase inhibitors"),
            "monoamine oxidase"
        ));
    }

    #[test]
    fn excerpts_hold_the_sentence() {
        let text = "Intro text. Taking it with warfarin raises the INR. Other things.";
        assert_eq!(
            excerpt(text, "warfarin"),
            "… Taking it with warfarin raises the INR."
        );
        assert_eq!(excerpt("Short.", "none"), "Short.");
    }
}

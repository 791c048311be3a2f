//! The query shapes read and refuse as the handlers need.
use super::*;

#[derive(Deserialize, Debug)]
#[allow(dead_code)]
struct Shape {
    person_id: Option<Reference>,
    at: Option<At>,
    needed: Reference,
}

fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn refusal(pairs: &[(&str, &str)]) -> (Option<&'static str>, String) {
    let refused = read::<Shape>(&params(pairs)).unwrap_err();
    (refused.field, refused.message)
}

#[test]
fn the_first_field_declared_that_does_not_read_is_named() {
    assert_eq!(
        refusal(&[("at", "soon"), ("person_id", "x"), ("needed", "1")]).0,
        Some("person_id")
    );
    assert_eq!(refusal(&[("at", "soon"), ("needed", "1")]).0, Some("at"));
    assert_eq!(refusal(&[]), (Some("needed"), "is required".into()));
    let shape = read::<Shape>(&params(&[("needed", "3"), ("other", "x")])).unwrap();
    assert_eq!(shape.needed, Reference(ResourceId::Numeric(3)));
    assert!(shape.person_id.is_none() && shape.at.is_none());
}

#[test]
fn the_page_reports_both_parameters() {
    let err =
        every_error::<PageQuery>(&params(&[("page", "0"), ("per_page", "x")]), "m").unwrap_err();
    match err {
        ApiError::Validation { errors, .. } => {
            assert_eq!(errors.into_keys().collect::<Vec<_>>(), ["page", "per_page"]);
        }
        other => panic!("{other:?}"),
    }
    let page: Page = every_error::<PageQuery>(&params(&[]), "m").unwrap().into();
    assert_eq!((page.page, page.per_page), (1, 20));
}

#[derive(Deserialize, Debug, PartialEq)]
enum Kind {
    #[serde(rename = "schedule")]
    Schedule,
    #[serde(rename = "person_medication")]
    PersonMedication,
}

#[test]
fn a_vocabulary_names_its_values() {
    let err = OneOf::<Kind>::deserialize(Text(Some("pill"))).unwrap_err();
    assert_eq!(err.message, "must be schedule or person_medication");
    let ok = OneOf::<Kind>::deserialize(Text(Some("schedule"))).unwrap();
    assert_eq!(ok.0, Kind::Schedule);
    assert_eq!(field_names::<PageQuery>(), ["page", "per_page"]);
}

#[test]
fn query_text_is_percent_decoded() {
    assert_eq!(percent_decode("a%20b+c%2"), "a b c%2");
}

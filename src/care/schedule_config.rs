//! `schedule_config`: when a schedule's doses fall, typed and checked
//! against its `schedule_type`. The stored JSON is
//! always the normalised form `ScheduleConfig::to_json` writes, so any
//! reader (the schedule API, the dose-occurrence projection) can call
//! [`parse`] on it and get the same typed config back.
//!
//! Keys: `times` ("HH:MM", unique, sorted), `slots` (`morning`,
//! `afternoon`, `evening`, `night`: clock times come from the person's
//! notification preference), `weekdays` (`monday`..`sunday`), `dates`
//! (ISO dates), `as_needed` (true only for `prn`), `taper_steps` (each
//! `start_date`, `end_date`, `dose_amount`, `dose_unit`, `max_daily_doses`,
//! `min_hours_between_doses`, `times`; in date order, contiguous).
//!
//! What each type needs:
//! - `daily`, `every_other_day` (counted from the schedule's start_date):
//!   at least one time or slot;
//! - `multiple_daily`: at least two times and slots in total;
//! - `weekly`: at least one weekday, and a time or slot;
//! - `specific_dates`: at least one date, and a time or slot;
//! - `tapering`: at least one step; a step without its own times uses the
//!   schedule's times and slots, so it needs either;
//! - `prn`: nothing (`as_needed` is always true; times and slots are hints
//!   only, a prn schedule has no expected doses).
//!
//! `weekdays`, `dates` and `taper_steps` belong to one type each and are
//! refused on the others, so a schedule never carries a rule it ignores.

use jiff::civil::{Date, Time, Weekday};
use serde_json::{Map, Value, json};

use crate::decimal::{NonNegativeDecimal, PositiveDecimal};
use crate::error::{Problems, Result};
use crate::medicine::vocab::{DoseUnit, ScheduleType};
pub use model::{Slot, TaperStep, WeekdayName};
pub use read::parse_date;
use read::{read_dates, read_slots, read_steps, read_times, read_weekdays};

mod model;
mod read;

/// The attribute name; problems are reported as `schedule_config.<key>`.
pub const FIELD: &str = "schedule_config";

/// A checked schedule_config. Lists are sorted (times by clock, slots by
/// part of day, weekdays from Monday, dates and steps by date) and hold no
/// repeats; keys a type does not use are empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScheduleConfig {
    pub times: Vec<Time>,
    pub slots: Vec<Slot>,
    pub weekdays: Vec<Weekday>,
    pub dates: Vec<Date>,
    /// True exactly for `prn` schedules.
    pub as_needed: bool,
    pub taper_steps: Vec<TaperStep>,
}

impl ScheduleConfig {
    /// The normalised JSON stored and sent: non-empty lists only, and
    /// `as_needed` only when true; every step carries all its keys.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.times.is_empty() {
            out.insert("times".into(), times_json(&self.times));
        }
        if !self.slots.is_empty() {
            out.insert(
                "slots".into(),
                json!(self.slots.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
            );
        }
        if !self.weekdays.is_empty() {
            let names: Vec<&str> = self
                .weekdays
                .iter()
                .map(|d| WeekdayName::of(*d).as_str())
                .collect();
            out.insert("weekdays".into(), json!(names));
        }
        if !self.dates.is_empty() {
            let dates: Vec<String> = self.dates.iter().map(Date::to_string).collect();
            out.insert("dates".into(), json!(dates));
        }
        if self.as_needed {
            out.insert("as_needed".into(), json!(true));
        }
        if !self.taper_steps.is_empty() {
            let steps: Vec<Value> = self
                .taper_steps
                .iter()
                .map(|s| {
                    json!({
                        "start_date": s.start_date.to_string(),
                        "end_date": s.end_date.to_string(),
                        "dose_amount": s.dose_amount,
                        "dose_unit": s.dose_unit,
                        "max_daily_doses": s.max_daily_doses,
                        "min_hours_between_doses": s.min_hours_between_doses,
                        "times": times_json(&s.times),
                    })
                })
                .collect();
            out.insert("taper_steps".into(), Value::Array(steps));
        }
        Value::Object(out)
    }

    /// The taper step covering `date`, if any.
    pub fn taper_step_on(&self, date: Date) -> Option<&TaperStep> {
        self.taper_steps
            .iter()
            .find(|s| s.start_date <= date && date <= s.end_date)
    }
}

fn times_json(times: &[Time]) -> Value {
    json!(
        times
            .iter()
            .map(|t| t.strftime("%H:%M").to_string())
            .collect::<Vec<_>>()
    )
}

/// Parses and checks a config for `schedule_type`: a 422 naming every
/// offending `schedule_config.<key>`.
pub fn parse(schedule_type: ScheduleType, value: &Value) -> Result<ScheduleConfig> {
    let mut problems = Problems::default();
    let config = collect(schedule_type, value, &mut problems);
    problems.check("the schedule_config is invalid")?;
    Ok(config)
}

/// As [`parse`], adding problems to a caller's collector (the config is
/// meaningful only when none were added).
pub fn collect(
    schedule_type: ScheduleType,
    value: &Value,
    problems: &mut Problems,
) -> ScheduleConfig {
    let mut config = ScheduleConfig::default();
    let Some(object) = value.as_object() else {
        problems.add(FIELD, "must be an object (use {} for none)");
        return config;
    };
    let field = |key: &str| format!("{FIELD}.{key}");
    for (key, value) in object {
        match key.as_str() {
            "times" => config.times = read_times(value, &field(key), problems),
            "slots" => config.slots = read_slots(value, &field(key), problems),
            "weekdays" => config.weekdays = read_weekdays(value, &field(key), problems),
            "dates" => config.dates = read_dates(value, &field(key), problems),
            "as_needed" => match value.as_bool() {
                Some(flag) => config.as_needed = flag,
                None => problems.add(&field(key), "must be true or false"),
            },
            "taper_steps" => config.taper_steps = read_steps(value, &field(key), problems),
            _ => problems.add(&field(key), "is not a recognised attribute"),
        }
    }
    check_type(schedule_type, object, &mut config, problems);
    config
}

/// The per-type rules, once every key has been read.
fn check_type(
    schedule_type: ScheduleType,
    object: &Map<String, Value>,
    config: &mut ScheduleConfig,
    problems: &mut Problems,
) {
    refuse_keys_of_other_types(schedule_type, config, problems);
    let name = schedule_type.as_str();
    if schedule_type == ScheduleType::Prn {
        if object.contains_key("as_needed") && !config.as_needed {
            problems.add(
                &format!("{FIELD}.as_needed"),
                "is always true for prn schedules",
            );
        }
        config.as_needed = true;
        return;
    }
    if config.as_needed {
        problems.add(
            &format!("{FIELD}.as_needed"),
            format!("is only for prn schedules; a {name} schedule has set times"),
        );
    }
    require_what_the_type_needs(schedule_type, object, config, problems);
}

/// `weekdays`, `dates` and `taper_steps` on a type they do not belong to.
fn refuse_keys_of_other_types(
    schedule_type: ScheduleType,
    config: &ScheduleConfig,
    problems: &mut Problems,
) {
    use ScheduleType as T;
    let owner = |key: &str| match key {
        "weekdays" => T::Weekly,
        "dates" => T::SpecificDates,
        _ => T::Tapering,
    };
    let used = [
        ("weekdays", !config.weekdays.is_empty()),
        ("dates", !config.dates.is_empty()),
        ("taper_steps", !config.taper_steps.is_empty()),
    ];
    for (key, used) in used {
        if used && schedule_type != owner(key) {
            problems.add(
                &format!("{FIELD}.{key}"),
                format!(
                    "is used only by {} schedules, not {}",
                    owner(key).as_str(),
                    schedule_type.as_str()
                ),
            );
        }
    }
}

/// The times or slots, weekdays, dates or taper steps a timed type needs.
fn require_what_the_type_needs(
    schedule_type: ScheduleType,
    object: &Map<String, Value>,
    config: &ScheduleConfig,
    problems: &mut Problems,
) {
    use ScheduleType as T;
    let name = schedule_type.as_str();
    // An invalid list has already been reported; only a missing one is.
    let missing = |key: &str| {
        object
            .get(key)
            .is_none_or(|v| v.as_array().is_some_and(Vec::is_empty))
    };
    let moments = config.times.len() + config.slots.len();
    let unreadable = (!missing("times") && config.times.is_empty())
        || (!missing("slots") && config.slots.is_empty());
    let times_field = format!("{FIELD}.times");
    match schedule_type {
        _ if unreadable => {}
        T::MultipleDaily if moments < 2 => problems.add(
            &times_field,
            "a multiple_daily schedule needs at least two times and slots in total",
        ),
        T::Daily | T::EveryOtherDay | T::Weekly | T::SpecificDates if moments == 0 => problems.add(
            &times_field,
            format!("a {name} schedule needs at least one time or slot"),
        ),
        _ => {}
    }
    match schedule_type {
        T::Weekly if missing("weekdays") => problems.add(
            &format!("{FIELD}.weekdays"),
            "a weekly schedule needs at least one weekday",
        ),
        T::SpecificDates if missing("dates") => problems.add(
            &format!("{FIELD}.dates"),
            "a specific_dates schedule needs at least one date",
        ),
        T::Tapering if missing("taper_steps") => problems.add(
            &format!("{FIELD}.taper_steps"),
            "a tapering schedule needs at least one step",
        ),
        T::Tapering if moments == 0 && !unreadable => {
            for (i, step) in config.taper_steps.iter().enumerate() {
                if step.times.is_empty() {
                    problems.add(
                        &format!("{FIELD}.taper_steps[{i}].times"),
                        "is required unless the schedule has times or slots",
                    );
                }
            }
        }
        _ => {}
    }
}

// The wire form is read by `parse` against the schedule's type (which keys
// a type needs cannot be said by the schema alone), so its schema is
// written here, beside that reader, once.
impl schemars::JsonSchema for ScheduleConfig {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ScheduleConfig".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schema()
            .try_into()
            .expect("the schedule_config schema is an object")
    }
}

/// A type's own (inline) schema, within this one written by hand.
fn inline<T: schemars::JsonSchema>() -> Value {
    schemars::SchemaGenerator::default()
        .subschema_for::<T>()
        .to_value()
}

/// The JSON schema of a stored (normalised) or submitted schedule_config.
fn schema() -> Value {
    let time = json!({"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"});
    let times = json!({"type": "array", "items": time, "uniqueItems": true,
        "description": "Clock times in the household's time zone, HH:MM"});
    let nullable = |schema: Value| json!({"anyOf": [schema, {"type": "null"}]});
    json!({
        "type": "object",
        "additionalProperties": false,
        "description": "When doses fall; which keys a schedule_type needs is described under Schedule",
        "properties": {
            "times": times,
            "slots": {"type": "array", "uniqueItems": true,
                "items": {"type": "string", "enum": Slot::ALL},
                "description": "Parts of the day; their times come from the person's notification preference"},
            "weekdays": {"type": "array", "uniqueItems": true,
                "items": WeekdayName::schema()},
            "dates": {"type": "array", "uniqueItems": true,
                "items": {"$ref": "#/components/schemas/Date"}},
            "as_needed": {"type": "boolean", "description": "Always true for prn schedules, absent otherwise"},
            "taper_steps": {"type": "array", "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["start_date", "end_date", "dose_amount"],
                "properties": {
                    "start_date": {"$ref": "#/components/schemas/Date"},
                    "end_date": {"$ref": "#/components/schemas/Date"},
                    "dose_amount": inline::<PositiveDecimal>(),
                    "dose_unit": nullable(DoseUnit::schema()),
                    "max_daily_doses": nullable(json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})),
                    "min_hours_between_doses": nullable(inline::<NonNegativeDecimal>()),
                    "times": times,
                },
            }, "description": "In date order; each step starts the day after the one before ends"},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(schedule_type: ScheduleType, config: Value) -> Vec<String> {
        match parse(schedule_type, &config) {
            Ok(_) => Vec::new(),
            Err(crate::error::ApiError::Validation { errors, .. }) => errors.into_keys().collect(),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn normalises_lists() {
        let config = parse(
            ScheduleType::Weekly,
            &json!({"times": ["20:00", "08:30"], "slots": ["night", "morning"],
                    "weekdays": ["friday", "monday"]}),
        )
        .unwrap();
        assert_eq!(
            config.to_json(),
            json!({"times": ["08:30", "20:00"], "slots": ["morning", "night"],
                   "weekdays": ["monday", "friday"]})
        );
        assert_eq!(
            parse(ScheduleType::Weekly, &config.to_json()).unwrap(),
            config
        );
        let prn = parse(ScheduleType::Prn, &json!({})).unwrap();
        assert!(prn.as_needed);
        assert_eq!(prn.to_json(), json!({"as_needed": true}));
    }

    #[test]
    fn per_type_requirements() {
        use ScheduleType as T;
        assert_eq!(fields(T::Daily, json!({})), ["schedule_config.times"]);
        assert_eq!(
            fields(T::Daily, json!({"slots": ["morning"]})),
            Vec::<String>::new()
        );
        assert_eq!(
            fields(T::MultipleDaily, json!({"times": ["08:00"]})),
            ["schedule_config.times"]
        );
        assert!(
            fields(
                T::MultipleDaily,
                json!({"times": ["08:00"], "slots": ["night"]})
            )
            .is_empty()
        );
        assert_eq!(
            fields(T::Weekly, json!({"times": ["08:00"]})),
            ["schedule_config.weekdays"]
        );
        assert_eq!(
            fields(T::SpecificDates, json!({"dates": ["2026-01-05"]})),
            ["schedule_config.times"]
        );
        assert_eq!(
            fields(
                T::Daily,
                json!({"times": ["08:00"], "weekdays": ["monday"]})
            ),
            ["schedule_config.weekdays"]
        );
        assert_eq!(
            fields(T::Daily, json!({"times": ["08:00"], "colour": "red"})),
            ["schedule_config.colour"]
        );
        assert_eq!(
            fields(T::Daily, json!({"times": ["08:00"], "as_needed": true})),
            ["schedule_config.as_needed"]
        );
        assert_eq!(
            fields(T::Prn, json!({"as_needed": false})),
            ["schedule_config.as_needed"]
        );
        assert_eq!(fields(T::Daily, json!([])), ["schedule_config"]);
    }

    #[test]
    fn bad_values() {
        use ScheduleType as T;
        for bad in [
            json!(["8:00"]),
            json!(["24:00"]),
            json!("08:00"),
            json!(["08:00", "08:00"]),
        ] {
            assert_eq!(
                fields(T::Daily, json!({ "times": bad })),
                ["schedule_config.times"],
                "{bad}"
            );
        }
        assert_eq!(
            fields(
                T::SpecificDates,
                json!({"times": ["08:00"], "dates": ["2026-02-30"]})
            ),
            ["schedule_config.dates"]
        );
    }

    #[test]
    fn taper_steps() {
        use ScheduleType as T;
        let step = |start: &str, end: &str, amount: Value| json!({"start_date": start, "end_date": end, "dose_amount": amount, "times": ["08:00"]});
        let good = json!({"taper_steps": [
            step("2026-01-01", "2026-01-07", json!("2")),
            step("2026-01-08", "2026-01-14", json!("1")),
        ]});
        let config = parse(T::Tapering, &good).unwrap();
        let day = "2026-01-09".parse().unwrap();
        assert_eq!(
            config.taper_step_on(day).unwrap().dose_amount.to_string(),
            "1"
        );
        assert_eq!(parse(T::Tapering, &config.to_json()).unwrap(), config);

        let gap = json!({"taper_steps": [
            step("2026-01-01", "2026-01-07", json!("2")),
            step("2026-01-09", "2026-01-14", json!("1")),
        ]});
        assert_eq!(
            fields(T::Tapering, gap),
            ["schedule_config.taper_steps[1].start_date"]
        );
        let overlap = json!({"taper_steps": [
            step("2026-01-01", "2026-01-07", json!("2")),
            step("2026-01-07", "2026-01-14", json!("1")),
        ]});
        assert_eq!(
            fields(T::Tapering, overlap),
            ["schedule_config.taper_steps[1].start_date"]
        );
        let number = json!({"taper_steps": [step("2026-01-01", "2026-01-07", json!(2))]});
        assert_eq!(
            fields(T::Tapering, number),
            ["schedule_config.taper_steps[0].dose_amount"]
        );
        let backwards = json!({"taper_steps": [step("2026-01-07", "2026-01-01", json!("1"))]});
        assert_eq!(
            fields(T::Tapering, backwards),
            ["schedule_config.taper_steps[0].end_date"]
        );
        let no_times = json!({"taper_steps": [
            {"start_date": "2026-01-01", "end_date": "2026-01-07", "dose_amount": "1"}]});
        assert_eq!(
            fields(T::Tapering, no_times.clone()),
            ["schedule_config.taper_steps[0].times"]
        );
        let mut with_slots = no_times;
        with_slots["slots"] = json!(["morning"]);
        assert!(fields(T::Tapering, with_slots).is_empty());
        assert_eq!(
            fields(T::Tapering, json!({"times": ["08:00"]})),
            ["schedule_config.taper_steps"]
        );
    }
}

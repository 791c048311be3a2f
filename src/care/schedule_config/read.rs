//! Reading `schedule_config`'s JSON into typed values, one key at a time,
//! each problem named by its path (`schedule_config.taper_steps[0].times`).

use jiff::civil::{Date, Time, Weekday};
use serde_json::{Map, Value};

use super::model::{STEP_KEYS, Slot, TaperStep, WeekdayName};
use crate::decimal::{Dec, NonNegativeDecimal, PositiveDecimal};
use crate::error::{ApiError, Problems};
use crate::medicine::vocab::DoseUnit;

fn array<'a>(value: &'a Value, field: &str, what: &str, problems: &mut Problems) -> &'a [Value] {
    match value.as_array() {
        Some(items) => items,
        None => {
            problems.add(field, format!("must be an array of {what}"));
            &[]
        }
    }
}

/// Reads a list with `read` per item, sorting by `key` and refusing repeats.
fn list<T, K: Ord>(
    value: &Value,
    field: &str,
    what: &str,
    problems: &mut Problems,
    read: impl Fn(&Value) -> Option<T>,
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let items = array(value, field, what, problems);
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match read(item) {
            Some(v) => out.push(v),
            None => {
                problems.add(field, format!("must be an array of {what}"));
                return Vec::new();
            }
        }
    }
    out.sort_by_key(|v| key(v));
    if out.windows(2).any(|w| key(&w[0]) == key(&w[1])) {
        problems.add(field, "must not repeat a value");
    }
    out
}

/// "HH:MM", 00:00 to 23:59.
pub fn parse_time(text: &str) -> Option<Time> {
    let b = text.as_bytes();
    if b.len() != 5 || b[2] != b':' || ![0, 1, 3, 4].iter().all(|&i| b[i].is_ascii_digit()) {
        return None;
    }
    let hour = (b[0] - b'0') * 10 + (b[1] - b'0');
    let minute = (b[3] - b'0') * 10 + (b[4] - b'0');
    Time::new(hour as i8, minute as i8, 0, 0).ok()
}

/// Strictly "YYYY-MM-DD".
pub fn parse_date(text: &str) -> Option<Date> {
    let b = text.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if shaped { text.parse().ok() } else { None }
}

pub(super) fn read_times(value: &Value, field: &str, problems: &mut Problems) -> Vec<Time> {
    list(
        value,
        field,
        "times written HH:MM (00:00 to 23:59)",
        problems,
        |v| v.as_str().and_then(parse_time),
        |t| *t,
    )
}

pub(super) fn read_slots(value: &Value, field: &str, problems: &mut Problems) -> Vec<Slot> {
    list(
        value,
        field,
        "morning, afternoon, evening or night",
        problems,
        |v| v.as_str().and_then(Slot::parse),
        |s| *s,
    )
}

pub(super) fn read_weekdays(value: &Value, field: &str, problems: &mut Problems) -> Vec<Weekday> {
    list(
        value,
        field,
        "weekday names (monday to sunday)",
        problems,
        |v| {
            v.as_str()
                .and_then(WeekdayName::parse)
                .map(WeekdayName::day)
        },
        |d| d.to_monday_zero_offset(),
    )
}

pub(super) fn read_dates(value: &Value, field: &str, problems: &mut Problems) -> Vec<Date> {
    list(
        value,
        field,
        "dates written YYYY-MM-DD",
        problems,
        |v| v.as_str().and_then(parse_date),
        |d| *d,
    )
}

pub(super) fn read_steps(value: &Value, field: &str, problems: &mut Problems) -> Vec<TaperStep> {
    let items = array(value, field, "steps", problems);
    let steps: Vec<Option<TaperStep>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| read_step(item, &format!("{field}[{i}]"), problems))
        .collect();
    if steps.iter().any(Option::is_none) {
        return Vec::new();
    }
    let steps: Vec<TaperStep> = steps.into_iter().flatten().collect();
    for (i, pair) in steps.windows(2).enumerate() {
        let (before, step) = (&pair[0], &pair[1]);
        let start = format!("{field}[{}].start_date", i + 1);
        if step.start_date <= before.end_date {
            problems.add(
                &start,
                "overlaps the step before it; list steps in date order",
            );
        } else if before.end_date.tomorrow().ok() != Some(step.start_date) {
            problems.add(&start, "must be the day after the step before it ends");
        }
    }
    steps
}

/// One step; `None` (with its problems added) unless every key is valid.
fn read_step(value: &Value, field: &str, problems: &mut Problems) -> Option<TaperStep> {
    let mut own = Problems::default();
    let step = read_step_fields(value, field, &mut own);
    let valid = own.is_empty();
    if let Err(ApiError::Validation { errors, .. }) = own.check("") {
        for (key, messages) in errors {
            for message in messages {
                problems.add(&key, message);
            }
        }
    }
    step.filter(|_| valid)
}

fn read_step_fields(value: &Value, field: &str, problems: &mut Problems) -> Option<TaperStep> {
    let Some(object) = value.as_object() else {
        problems.add(field, "must be an object");
        return None;
    };
    let step = StepObject { object, field };
    for key in object.keys() {
        if !STEP_KEYS.contains(&key.as_str()) {
            problems.add(&step.at(key), "is not a recognised attribute");
        }
    }
    let start_date = step.date("start_date", problems);
    let end_date = step.date("end_date", problems);
    if let (Some(start), Some(end)) = (start_date, end_date)
        && end < start
    {
        problems.add(&step.at("end_date"), "must not be before start_date");
    }
    let dose_amount = step.dose_amount(problems);
    let dose_unit = step.dose_unit(problems);
    let max_daily_doses = step.max_daily_doses(problems);
    let min_hours_between_doses = step.min_hours_between_doses(problems);
    let times = match object.get("times") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.is_empty() => Vec::new(),
        Some(v) => read_times(v, &step.at("times"), problems),
    };
    Some(TaperStep {
        start_date: start_date?,
        end_date: end_date?,
        dose_amount: dose_amount?,
        dose_unit,
        max_daily_doses,
        min_hours_between_doses,
        times,
    })
}

/// One taper step's object and its path, read key by key.
struct StepObject<'a> {
    object: &'a Map<String, Value>,
    field: &'a str,
}

impl StepObject<'_> {
    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.field)
    }

    /// The value of `key`, when it is given and not null.
    fn given(&self, key: &str) -> Option<&Value> {
        self.object.get(key).filter(|v| !v.is_null())
    }

    fn date(&self, key: &str, problems: &mut Problems) -> Option<Date> {
        let Some(v) = self.given(key) else {
            problems.add(&self.at(key), "is required");
            return None;
        };
        let parsed = v.as_str().and_then(parse_date);
        if parsed.is_none() {
            problems.add(&self.at(key), "must be a date written YYYY-MM-DD");
        }
        parsed
    }

    fn dose_amount(&self, problems: &mut Problems) -> Option<Dec> {
        let Some(v) = self.given("dose_amount") else {
            problems.add(&self.at("dose_amount"), "is required");
            return None;
        };
        match read_decimal::<PositiveDecimal>(v) {
            Ok(d) => Some(d.get()),
            Err(message) => {
                problems.add(&self.at("dose_amount"), message);
                None
            }
        }
    }

    fn dose_unit(&self, problems: &mut Problems) -> Option<DoseUnit> {
        let v = self.given("dose_unit")?;
        let unit = v.as_str().and_then(DoseUnit::parse);
        if unit.is_none() {
            problems.add(
                &self.at("dose_unit"),
                format!("must be one of {}", DoseUnit::ALL.join(", ")),
            );
        }
        unit
    }

    fn max_daily_doses(&self, problems: &mut Problems) -> Option<i64> {
        match self.given("max_daily_doses")?.as_i64() {
            Some(n) if n >= 1 => Some(n),
            _ => {
                problems.add(
                    &self.at("max_daily_doses"),
                    "must be an integer of at least 1",
                );
                None
            }
        }
    }

    fn min_hours_between_doses(&self, problems: &mut Problems) -> Option<Dec> {
        match read_decimal::<NonNegativeDecimal>(self.given("min_hours_between_doses")?) {
            Ok(d) => Some(d.get()),
            Err(message) => {
                problems.add(&self.at("min_hours_between_doses"), message);
                None
            }
        }
    }
}

/// A decimal string (never a JSON number), as `Dec` reads it.
/// A decimal held to its type's range (the type words the refusal).
fn read_decimal<T: TryFrom<Dec, Error = &'static str>>(
    value: &Value,
) -> std::result::Result<T, String> {
    match value {
        Value::String(s) => {
            let d = s.parse::<Dec>().map_err(|e| e.to_string())?;
            T::try_from(d).map_err(String::from)
        }
        Value::Number(_) => {
            Err("must be a decimal string such as \"2.5\", not a JSON number".into())
        }
        _ => Err("must be a decimal string such as \"2.5\"".into()),
    }
}

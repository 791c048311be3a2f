//! The reports as A4 PDF documents: a title block (household, person,
//! period), one section per part of the report, page numbers in the footer
//! and every date and time in the household time zone. Text is set in
//! DejaVu Sans, embedded in the binary (assets/fonts/, Bitstream Vera
//! licence), which covers accented and non-Latin names. Rendering is CPU
//! work: callers run it on a blocking thread.

use std::sync::OnceLock;

use jiff::tz::TimeZone;
use krilla::Document;
use krilla::geom::Point;
use krilla::metadata::Metadata;
use krilla::page::PageSettings;
use krilla::text::{Font, TextDirection};

use super::local;
use super::model::{HealthHistoryReport, MedicationReviewsReport, ReportMedicine};
use crate::domain::Timestamp;
use crate::reports::review_prompts::model::MedicationReviewPrompt;

static FONT_DATA: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

const PAGE_WIDTH: f32 = 595.28;
const PAGE_HEIGHT: f32 = 841.89;
const MARGIN: f32 = 50.0;
const BODY: f32 = 10.0;
const HEADING: f32 = 13.0;
const TITLE: f32 = 17.0;
/// Average advance of DejaVu Sans, in ems, rounded up so lines never
/// overrun the margin.
const AVERAGE_ADVANCE: f32 = 0.6;

fn font() -> Option<Font> {
    static FONT: OnceLock<Option<Font>> = OnceLock::new();
    FONT.get_or_init(|| Font::new(FONT_DATA.into(), 0)).clone()
}

/// One line of the document.
#[derive(Debug, Clone)]
struct Line {
    text: String,
    size: f32,
    indent: f32,
    /// Extra space above the line.
    gap: f32,
}

/// A document being written: lines, wrapped to the page width.
#[derive(Default)]
struct Writer {
    lines: Vec<Line>,
}

impl Writer {
    fn push(&mut self, text: &str, size: f32, indent: f32, gap: f32) {
        let width = PAGE_WIDTH - 2.0 * MARGIN - indent;
        let max_chars = ((width / (size * AVERAGE_ADVANCE)) as usize).max(10);
        let mut first = true;
        for line in wrap(text, max_chars) {
            self.lines.push(Line {
                text: line,
                size,
                indent: if first { indent } else { indent + 10.0 },
                gap: if first { gap } else { 0.0 },
            });
            first = false;
        }
    }

    fn title(&mut self, text: &str) {
        self.push(text, TITLE, 0.0, 0.0);
    }

    fn heading(&mut self, text: &str) {
        self.push(text, HEADING, 0.0, 12.0);
    }

    fn text(&mut self, text: &str) {
        self.push(text, BODY, 0.0, 0.0);
    }

    fn item(&mut self, text: &str) {
        self.push(&format!("• {text}"), BODY, 8.0, 2.0);
    }

    fn detail(&mut self, text: &str) {
        self.push(text, BODY - 1.0, 20.0, 0.0);
    }

    fn none(&mut self, what: &str) {
        self.push(&format!("No {what}."), BODY, 8.0, 2.0);
    }
}

/// Splits text into lines of at most `max` characters at spaces (a word
/// longer than a line is cut).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let mut word: String = word.to_string();
            while word.chars().count() > max {
                let head: String = word.chars().take(max).collect();
                word = word.chars().skip(max).collect();
                if !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                }
                out.push(head);
            }
            let needed =
                line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
            if needed > max && !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        out.push(line);
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

fn line_height(size: f32) -> f32 {
    size * 1.4
}

/// Lays the lines out on A4 pages with a running header and "Page n of m".
fn render(title: &str, header: &str, lines: &[Line]) -> Result<Vec<u8>, String> {
    let font = font().ok_or("the embedded font cannot be read")?;
    let top = MARGIN + 18.0;
    let bottom = PAGE_HEIGHT - MARGIN - 10.0;
    // Paginate first so that every footer knows the page count.
    let mut pages: Vec<Vec<(f32, &Line)>> = vec![Vec::new()];
    let mut y = top;
    for line in lines {
        let height = line_height(line.size) + line.gap;
        if y + height > bottom && !pages.last().is_some_and(Vec::is_empty) {
            pages.push(Vec::new());
            y = top;
        }
        y += height;
        if let Some(page) = pages.last_mut() {
            page.push((y - line.size * 0.3, line));
        }
    }
    let count = pages.len();
    let mut document = Document::new();
    document.set_metadata(
        Metadata::new()
            .title(title.to_string())
            .creator("Pillbox".to_string())
            .producer(format!("Pillbox {}", env!("CARGO_PKG_VERSION"))),
    );
    let settings = PageSettings::from_wh(PAGE_WIDTH, PAGE_HEIGHT).ok_or("bad page size")?;
    for (number, page_lines) in pages.iter().enumerate() {
        let mut page = document.start_page_with(settings.clone());
        let mut surface = page.surface();
        let mut draw = |x: f32, y: f32, size: f32, text: &str| {
            surface.draw_text(
                Point::from_xy(x, y),
                font.clone(),
                size,
                text,
                false,
                TextDirection::Auto,
            );
        };
        draw(MARGIN, MARGIN, 8.0, header);
        for (y, line) in page_lines {
            if !line.text.is_empty() {
                draw(MARGIN + line.indent, *y, line.size, &line.text);
            }
        }
        let footer = format!("Page {} of {count}", number + 1);
        draw(
            PAGE_WIDTH - MARGIN - 70.0,
            PAGE_HEIGHT - MARGIN + 10.0,
            8.0,
            &footer,
        );
        surface.finish();
        page.finish();
    }
    document
        .finish()
        .map_err(|e| format!("cannot write the PDF: {e:?}"))
}

fn medicines(w: &mut Writer, medicines: &[ReportMedicine]) {
    w.heading("Current medicines");
    if medicines.is_empty() {
        w.none("current medicines");
    }
    for m in medicines {
        let paused = if m.active { "" } else { " (paused)" };
        w.item(&format!(
            "{}: {} {}, {}{paused}",
            m.medication_name, m.dose_amount, m.dose_unit, m.timing
        ));
        match (&m.start_date, &m.end_date) {
            (Some(start), Some(end)) => w.detail(&format!("From {start} to {end}")),
            (Some(start), None) => w.detail(&format!("From {start}")),
            _ => {}
        }
    }
}

fn reviews(w: &mut Writer, prompts: &[MedicationReviewPrompt], tz: &TimeZone) {
    w.heading("Medication reviews");
    if prompts.is_empty() {
        w.none("medication review prompts");
    }
    for p in prompts {
        let e = &p.evidence;
        w.item(&format!(
            "{} and {}: {} priority, {}",
            e.medication_name,
            e.other_medication_name,
            p.priority.as_str(),
            p.review_status.as_str().replace('_', " ")
        ));
        w.detail(&format!("Evidence: “{}”", e.excerpt));
        let version = e
            .version
            .as_deref()
            .map(|v| format!(", version {v}"))
            .unwrap_or_default();
        let effective = e
            .effective_date
            .as_deref()
            .map(|d| format!(", effective {d}"))
            .unwrap_or_default();
        w.detail(&format!(
            "Source: {} {}{version}{effective}",
            e.source_name, e.record_id
        ));
        w.detail(&e.url);
        if let (Some(name), Some(role), Some(on)) =
            (&p.practitioner_name, &p.practitioner_role, &p.reviewed_on)
        {
            w.detail(&format!("Reviewed by {name} ({role}) on {on}"));
        }
        if let Some(notes) = &p.notes {
            w.detail(&format!("Notes: {notes}"));
        }
        w.detail(&format!("Prompt made {}", local(&p.created_at, tz)));
    }
}

fn title_block(w: &mut Writer, title: &str, household: &str, person: &str, dob: Option<&str>) {
    w.title(title);
    w.text(&format!("Household: {household}"));
    match dob {
        Some(dob) => w.text(&format!("Person: {person} (born {dob})")),
        None => w.text(&format!("Person: {person}")),
    }
}

fn generated(w: &mut Writer, at: &Timestamp, tz: &TimeZone, zone_name: &str) {
    w.text(&format!("Generated {} ({zone_name})", local(at, tz)));
}

/// The health history as a PDF.
pub fn health_history(report: &HealthHistoryReport) -> Result<Vec<u8>, String> {
    let tz = TimeZone::get(&report.household.time_zone).unwrap_or(TimeZone::UTC);
    let zone_name = &report.household.time_zone;
    let mut w = Writer::default();
    title_block(
        &mut w,
        "Health history",
        &report.household.name,
        &report.person.name,
        report.person.date_of_birth.as_deref(),
    );
    w.text(&format!(
        "Period: {} to {}",
        report.period.start_date, report.period.end_date
    ));
    generated(&mut w, &report.generated_at, &tz, zone_name);
    medicines(&mut w, &report.medicines);
    w.heading("Pauses");
    if report.pauses.is_empty() {
        w.none("pauses in this period");
    }
    for p in &report.pauses {
        let from = p
            .started_at
            .as_ref()
            .map_or("an unknown start".to_string(), |t| local(t, &tz));
        let to = p
            .ended_at
            .as_ref()
            .map_or("now".to_string(), |t| local(t, &tz));
        w.item(&format!(
            "{}: paused from {from} to {to}, reason: {}",
            p.medication_name,
            p.reason.replace('_', " ")
        ));
        if let Some(note) = &p.note {
            w.detail(&format!("Note: {note}"));
        }
    }
    if let Some(takes) = &report.medication_takes {
        w.heading("Medication taken");
        if takes.is_empty() {
            w.none("doses recorded in this period");
        }
        for t in takes {
            w.item(&format!(
                "{} {}: {} {}",
                t.taken_at_local, t.medication_name, t.dose_amount, t.dose_unit
            ));
        }
    }
    w.heading("Health events");
    if report.health_events.is_empty() {
        w.none("health events in this period");
    }
    for e in &report.health_events {
        let until = e
            .ended_on
            .as_deref()
            .map(|d| format!(" to {d}"))
            .unwrap_or_default();
        let severity = e
            .severity
            .as_deref()
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        w.item(&format!(
            "{}{until}: {} ({}{severity})",
            e.started_on,
            e.title,
            e.event_kind.replace('_', " ")
        ));
        if let Some(notes) = &e.notes {
            w.detail(notes);
        }
    }
    if let Some(prompts) = &report.reviews {
        reviews(&mut w, prompts, &tz);
    }
    let header = format!(
        "Health history · {} · {} · {} to {}",
        report.household.name, report.person.name, report.period.start_date, report.period.end_date
    );
    render(
        &format!("Health history of {}", report.person.name),
        &header,
        &w.lines,
    )
}

/// The medication reviews as a PDF.
pub fn medication_reviews(report: &MedicationReviewsReport) -> Result<Vec<u8>, String> {
    let tz = TimeZone::get(&report.household.time_zone).unwrap_or(TimeZone::UTC);
    let mut w = Writer::default();
    title_block(
        &mut w,
        "Medication reviews",
        &report.household.name,
        &report.person.name,
        report.person.date_of_birth.as_deref(),
    );
    if let Some(status) = report.review_status {
        w.text(&format!(
            "Reviews with status: {}",
            status.as_str().replace('_', " ")
        ));
    }
    generated(
        &mut w,
        &report.generated_at,
        &tz,
        &report.household.time_zone,
    );
    medicines(&mut w, &report.medicines);
    reviews(&mut w, &report.reviews, &tz);
    let header = format!(
        "Medication reviews · {} · {}",
        report.household.name, report.person.name
    );
    render(
        &format!("Medication reviews of {}", report.person.name),
        &header,
        &w.lines,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_wraps_at_spaces() {
        assert_eq!(wrap("aaa bbb ccc", 7), vec!["aaa bbb", "ccc"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), vec![""]);
    }

    #[test]
    fn the_font_loads() {
        assert!(font().is_some());
    }
}

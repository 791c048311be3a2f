//! Medication review prompts through the binary: `pillbox evidence import`
//! alone and beside a running server, and the server's own pass when
//! schedules change.

use std::time::Duration;

use serde_json::{Value, json};

use crate::review_prompts::fixture;
use crate::support::process::{
    count_rows, free_port, http_get, http_request, pillbox, run, serve, set_up_household,
    token_create,
};

/// `pillbox evidence import FILE` into `data`.
fn evidence_import(
    data: &std::path::Path,
    file: &std::path::Path,
) -> crate::support::process::Outcome {
    run(
        pillbox(&[
            "evidence",
            "import",
            "--data-dir",
            data.to_str().unwrap(),
            file.to_str().unwrap(),
        ]),
        None,
    )
}

#[test]
fn the_evidence_import_command_loads_and_updates_in_place() {
    let (dir, data, _) = set_up_household();
    let fixture = fixture();
    let out = evidence_import(&data, &fixture);
    out.assert_success();
    let line = out.single_stdout_line();
    assert!(
        line.starts_with(
            "imported 4 labels: 3 new, 0 updated, 0 unchanged, 1 without interaction text"
        ),
        "{line}"
    );
    assert_eq!(count_rows(&data, "SELECT count(*) FROM review_evidence"), 3);

    // The same file again changes nothing; a newer version updates in place.
    let again = evidence_import(&data, &fixture);
    assert!(
        again
            .single_stdout_line()
            .contains("0 new, 0 updated, 3 unchanged"),
        "{}",
        again.stdout
    );
    let newer = std::fs::read_to_string(&fixture)
        .unwrap()
        .replace("\"version\": \"42\"", "\"version\": \"43\"");
    let newer_file = dir.path().join("newer.json");
    std::fs::write(&newer_file, newer).unwrap();
    let updated = evidence_import(&data, &newer_file);
    assert!(
        updated
            .single_stdout_line()
            .contains("0 new, 1 updated, 2 unchanged"),
        "{}",
        updated.stdout
    );
    assert_eq!(count_rows(&data, "SELECT count(*) FROM review_evidence"), 3);
    assert_eq!(
        count_rows(
            &data,
            "SELECT count(*) FROM review_evidence WHERE version = '43'"
        ),
        1
    );

    // A file that is not a label file: one clear line, non-zero.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[1, 2, 3]").unwrap();
    evidence_import(&data, &bad).assert_one_line_failure("not an openFDA drug-label file");
}

/// A running server whose household has a person on daily Sertraline and
/// Warfarin (a pair the fixture's evidence names).
struct Served {
    dir: tempfile::TempDir,
    data: std::path::PathBuf,
    _server: crate::support::process::Guard,
    port: u16,
    token: String,
    household: String,
    person: Value,
}

impl Served {
    /// Starts the server, after importing the evidence when `evidence_first`.
    fn start(evidence_first: bool) -> Served {
        let (dir, data, household) = set_up_household();
        if evidence_first {
            evidence_import(&data, &fixture()).assert_success();
        }
        let token = token_create(&data, &household, "owner@example.org", &[])
            .single_stdout_line()
            .to_string();
        let port = free_port();
        let server = serve(&data, port, &dir.path().join("serve.log"));
        let mut served = Served {
            dir,
            data,
            _server: server,
            port,
            token,
            household,
            person: Value::Null,
        };
        served.person = served.post(
            "/people",
            json!({"person": {"name": "Zoë Ångström", "date_of_birth": "1950-02-03"}}),
        );
        for name in ["Sertraline 50mg tablets", "Warfarin 1mg tablets"] {
            let med = served.post("/medications", json!({"medication": {"name": name}}));
            served.post(
                "/schedules",
                json!({"schedule": {
                    "person_id": served.person["id"], "medication_id": med["id"],
                    "dose_amount": "1", "dose_unit": "tablet", "schedule_type": "daily",
                    "schedule_config": {"times": ["08:00"]}, "start_date": "2026-01-01",
                }}),
            );
        }
        served
    }

    fn hh(&self, rest: &str) -> String {
        format!("/api/v1/households/{}{rest}", self.household)
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let response = http_request(
            self.port,
            "POST",
            &self.hh(path),
            Some(&self.token),
            &[],
            Some(&body.to_string()),
        )
        .unwrap();
        assert_eq!(response.status, 201, "{}", response.body);
        response.json()["data"].clone()
    }

    /// A PATCH of `path` (a full path) with `etag` in If-Match.
    fn patch(&self, path: &str, etag: &str, body: Value) -> crate::support::process::HttpResponse {
        http_request(
            self.port,
            "PATCH",
            path,
            Some(&self.token),
            &[("If-Match", etag)],
            Some(&body.to_string()),
        )
        .unwrap()
    }

    /// The person's review queue as it is now.
    fn prompts(&self) -> Value {
        let queue = self.hh(&format!(
            "/medication_review_prompts?person_id={}",
            self.person["id"]
        ));
        http_get(self.port, &queue, Some(&self.token))
            .unwrap()
            .json()["data"]
            .clone()
    }
}

#[test]
fn an_import_beside_the_running_server_has_made_its_prompts_when_it_returns() {
    let served = Served::start(false);
    // The server's own pass after the schedules finds no evidence.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(served.prompts(), json!([]));

    evidence_import(&served.data, &fixture()).assert_success();
    // No waiting: the import ran the pass before it returned.
    let prompts = served.prompts();
    assert_eq!(prompts.as_array().map(Vec::len), Some(1), "{prompts}");
    assert_eq!(prompts[0]["evidence"]["matched_term"], "warfarin");
}

#[test]
fn the_served_binary_makes_prompts_when_schedules_change() {
    let served = Served::start(true);
    let mut prompts = Value::Null;
    for _ in 0..100 {
        prompts = served.prompts();
        if prompts.as_array().is_some_and(|p| !p.is_empty()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(prompts.as_array().map(Vec::len), Some(1), "{prompts}");
    assert_eq!(prompts[0]["evidence"]["matched_term"], "warfarin");

    // A review's practitioner details and notes stay out of the log, even
    // when the review is refused.
    let path = served.hh(&format!("/medication_review_prompts/{}", prompts[0]["id"]));
    let etag = prompts[0]["etag"].as_str().unwrap().to_string();
    let review = json!({"medication_review_prompt": {
        "review_status": "practitioner_reviewed", "practitioner_name": "Dr Quintessa Private",
        "practitioner_role": "pharmacist", "reviewed_on": "2026-11-20",
        "notes": "Confidential dosage advice",
    }});
    let refused = json!({"medication_review_prompt": {
        "review_status": "practitioner_changed", "notes": "Secret second note",
    }});
    let reviewed = served.patch(&path, &etag, review);
    assert_eq!(reviewed.status, 200, "{}", reviewed.body);
    assert_eq!(served.patch(&path, &etag, refused).status, 409);
    let log = std::fs::read_to_string(served.dir.path().join("serve.log")).unwrap();
    assert!(
        log.contains("medication_review_prompts"),
        "requests are logged: {log}"
    );
    for private in ["Quintessa", "Confidential", "Secret second"] {
        assert!(!log.contains(private), "{private} in the log: {log}");
    }
}

#[test]
fn a_household_import_makes_the_prompts_of_the_people_it_brings() {
    use crate::support::process::PASSPHRASE_LINE;
    let served = Served::start(false);
    let bundle = served.dir.path().join("home.bundle.json");
    run(
        pillbox(&[
            "export",
            "--data-dir",
            served.data.to_str().unwrap(),
            "--household",
            &served.household,
            "--out",
            bundle.to_str().unwrap(),
        ]),
        Some(PASSPHRASE_LINE),
    )
    .assert_success();

    let (_dir, destination, household) = set_up_household();
    evidence_import(&destination, &fixture()).assert_success();
    let count = "SELECT count(*) FROM medication_review_prompts";
    assert_eq!(count_rows(&destination, count), 0);
    let imported = run(
        pillbox(&[
            "import",
            "--data-dir",
            destination.to_str().unwrap(),
            "--household",
            &household,
            bundle.to_str().unwrap(),
        ]),
        Some(PASSPHRASE_LINE),
    );
    imported.assert_success();
    assert!(
        imported.stdout.contains("1 new review prompts"),
        "{}",
        imported.stdout
    );
    assert_eq!(count_rows(&destination, count), 1);
}

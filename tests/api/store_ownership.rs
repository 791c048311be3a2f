//! Every table is written by its own store only: another resource that
//! needs to change it calls the owner's function, so a rule (a version
//! bump, a change-feed entry) cannot be skipped by a second UPDATE written
//! elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files allowed to write each table.
const OWNERS: &[(&str, &[&str])] = &[
    // Credentials are auth's; the profile's preference columns are kept
    // there too, beside the account they belong to.
    ("accounts", &["src/auth/accounts.rs"]),
    // Authentication stamps a token's last use; auth sits below household
    // (household imports auth's Actor), so that stamp stays in auth.
    (
        "app_tokens",
        &["src/household/app_tokens/store.rs", "src/auth/store.rs"],
    ),
    ("audit_events", &["src/household/audit/store.rs"]),
    ("invitations", &["src/household/invitations/store.rs"]),
    ("mail_outbox", &["src/mail/store.rs"]),
    ("review_evidence", &["src/reports/evidence/store.rs"]),
    ("review_evidence_names", &["src/reports/evidence/store.rs"]),
    (
        "medication_review_prompts",
        &["src/reports/review_prompts/store.rs"],
    ),
    // Sign-in (src/identity). Authentication stamps a session's last use,
    // as it does an app token's.
    (
        "oauth_sessions",
        &["src/identity/sessions/store.rs", "src/auth/store.rs"],
    ),
    ("oauth_tokens", &["src/identity/sessions/store.rs"]),
    ("oauth_codes", &["src/identity/oauth/store.rs"]),
    ("account_totp", &["src/identity/mfa/store.rs"]),
    ("recovery_codes", &["src/identity/mfa/store.rs"]),
    ("sign_in_pending", &["src/identity/sign_in/store.rs"]),
    ("oidc_pending", &["src/identity/oidc/store.rs"]),
    ("linked_identities", &["src/identity/oidc/store.rs"]),
    ("oidc_pending_links", &["src/identity/oidc/store.rs"]),
    ("sign_in_failures", &["src/identity/events.rs"]),
    ("sign_in_events", &["src/identity/events.rs"]),
    ("avatars", &["src/household/profile/store.rs"]),
    ("change_feed", &["crates/storage/src/db/change_feed.rs"]),
    ("dosage_options", &["src/medicine/dosage_options/store.rs"]),
    (
        "dose_occurrences",
        &["src/care/dose_occurrences/store/outcomes.rs"],
    ),
    (
        "health_event_medications",
        &["src/care/health_events/store.rs"],
    ),
    ("health_events", &["src/care/health_events/store.rs"]),
    (
        "households",
        &["src/household/store.rs", "src/household/settings/store.rs"],
    ),
    (
        "idempotency_keys",
        &["crates/storage/src/db/idempotency.rs"],
    ),
    ("instance_settings", &["crates/storage/src/db/instance.rs"]),
    (
        "location_memberships",
        &["src/household/locations/store.rs"],
    ),
    ("locations", &["src/household/locations/store.rs"]),
    (
        "medication_pause_periods",
        &["src/care/pause_periods/store.rs"],
    ),
    (
        "medication_pause_period_actor_refs",
        &["src/care/pause_periods/store.rs"],
    ),
    ("medication_takes", &["src/care/medication_takes/store.rs"]),
    ("medications", &["src/medicine/medications/store.rs"]),
    ("memberships", &["src/household/memberships/store.rs"]),
    (
        "notification_preferences",
        &["src/care/notification_preferences/store.rs"],
    ),
    ("people", &["src/household/people/store.rs"]),
    ("person_access_grants", &["src/household/grants/store.rs"]),
    (
        "person_medications",
        &["src/care/person_medications/store.rs"],
    ),
    ("native_device_tokens", &["src/reminders/store.rs"]),
    ("ntfy_channels", &["src/reminders/store.rs"]),
    ("plan_revisions", &["src/care/dose_occurrences/history.rs"]),
    ("push_subscriptions", &["src/reminders/store.rs"]),
    ("reminder_households", &["src/reminders/store.rs"]),
    ("reminder_low_stock", &["src/reminders/store.rs"]),
    ("reminder_outbox", &["src/reminders/outbox_store.rs"]),
    ("schedules", &["src/care/schedules/store.rs"]),
    ("stock_removals", &["src/medicine/stock_removals/store.rs"]),
    // The database's own unit tests use scratch tables.
    (
        "t",
        &[
            "crates/storage/src/db/writer/mod.rs",
            "crates/storage/src/db/writer/group.rs",
        ],
    ),
    ("scratch", &["crates/storage/src/db/tests.rs"]),
    // Moved by the schema's triggers; those tests move it by hand for
    // their scratch table.
    ("plan_stamp", &["crates/storage/src/db/tests.rs"]),
    ("marked", &["crates/storage/src/db/commit_mark.rs"]),
    ("gathered", &["crates/storage/src/db/gathered_wal/tests.rs"]),
    ("statement_probe", &["crates/storage/src/db/statements.rs"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The tables a source text writes: the word after `UPDATE`, after
/// `INSERT [OR ...] INTO` and after `DELETE FROM`.
fn written_tables(text: &str) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '"' || c == '(')
        .filter(|w| !w.is_empty())
        .collect();
    let mut tables = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let table = match *word {
            "UPDATE" => words.get(i + 1),
            "INTO" if words[..i].iter().rev().take(3).any(|w| *w == "INSERT") => words.get(i + 1),
            "FROM" if i > 0 && words[i - 1] == "DELETE" => words.get(i + 1),
            _ => None,
        };
        // `ON CONFLICT ... DO UPDATE SET` names no table.
        if let Some(table) = table.filter(|t| **t != "SET") {
            tables.push(table.trim_end_matches([',', ';']).to_string());
        }
    }
    tables
}

#[test]
fn every_table_is_written_only_by_its_own_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let owners: BTreeMap<&str, &[&str]> = OWNERS.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut strays = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap();
        for table in written_tables(&text) {
            match owners.get(table.as_str()) {
                Some(allowed) if allowed.contains(&relative.as_str()) => {}
                Some(allowed) => strays.push(format!(
                    "{relative} writes {table}, which only {allowed:?} may write: call the owner's function"
                )),
                None => strays.push(format!(
                    "{relative} writes {table}, a table with no owner here (a name built at run time \
                     cannot be checked: write each table in its own store)"
                )),
            }
        }
    }
    assert!(strays.is_empty(), "{}", strays.join("\n"));
}

#[test]
fn the_scan_finds_every_form_of_write() {
    let sql = r#"conn.execute("UPDATE medications SET a = 1", [])?;
        "INSERT INTO people (name) VALUES (?1)"
        "INSERT OR IGNORE INTO grants (x)"
        "INSERT INTO avatars (p) VALUES (1) ON CONFLICT (p) DO UPDATE SET d = 2"
        "DELETE FROM location_memberships WHERE id = ?1"
        format!("UPDATE {table} SET active = 1")"#;
    assert_eq!(
        written_tables(sql),
        [
            "medications",
            "people",
            "grants",
            "avatars",
            "location_memberships",
            "{table}"
        ]
    );
}

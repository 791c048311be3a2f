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
    rust_files(&root.join("crates"), &mut files);
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

/// Tables of the database's own unit tests, not of any area.
const SCRATCH: &[&str] = &[
    "t",
    "scratch",
    "plan_stamp",
    "marked",
    "gathered",
    "statement_probe",
];

/// Reads of another area's table still written as raw SQL, each with why it
/// stays (a file, the table it reads, the reason). The list only shrinks.
const CROSS_AREA_EXCEPTIONS: &[(&str, &str, &str)] = &[
    // auth sits below household and identity yet decides who is calling
    // from memberships, grants and sessions: it cannot call their owners
    // (a lower floor never imports a higher one).
    (
        "src/auth/store.rs",
        "households",
        "the Actor's households, read at authentication",
    ),
    (
        "src/auth/store.rs",
        "memberships",
        "the Actor's membership, read at authentication",
    ),
    (
        "src/auth/store.rs",
        "oauth_tokens",
        "a session's token, verified at authentication",
    ),
    (
        "src/auth/store.rs",
        "people",
        "the Actor's person check, read at authentication",
    ),
    (
        "src/auth/store.rs",
        "person_access_grants",
        "VISIBLE_PERSON and the Actor's grants",
    ),
    // Not moved yet (issue 49 item 3, next steps).
    (
        "src/care/dose_occurrences/store/sources.rs",
        "people",
        "not moved yet",
    ),
    (
        "src/care/health_events/store.rs",
        "medications",
        "not moved yet",
    ),
    (
        "src/care/medication_takes/store.rs",
        "people",
        "not moved yet",
    ),
    ("src/cli/portable.rs", "memberships", "not moved yet"),
    (
        "src/household/invitations/store.rs",
        "accounts",
        "not moved yet",
    ),
    (
        "src/household/people/store.rs",
        "notification_preferences",
        "not moved yet",
    ),
    ("src/identity/events.rs", "memberships", "not moved yet"),
    ("src/identity/mfa/proof.rs", "accounts", "not moved yet"),
    (
        "src/identity/sessions/mod.rs",
        "memberships",
        "not moved yet",
    ),
    ("src/identity/sign_in/mod.rs", "accounts", "not moved yet"),
    (
        "src/reports/documents/store.rs",
        "health_events",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "households",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "medication_pause_periods",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "medication_takes",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "medications",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "person_medications",
        "not moved yet",
    ),
    (
        "src/reports/documents/store.rs",
        "schedules",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "change_feed",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "households",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "medications",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "people",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "person_medications",
        "not moved yet",
    ),
    (
        "src/reports/review_prompts/store.rs",
        "schedules",
        "not moved yet",
    ),
    ("src/sync/changes_store.rs", "change_feed", "not moved yet"),
    ("src/sync/changes_store.rs", "people", "not moved yet"),
];

/// The area of a source file: its top-level module.
fn area_of(relative: &str) -> &str {
    // A workspace crate's modules are areas too: crates/storage/src/db/… is `db`.
    let rest = match relative.strip_prefix("crates/") {
        Some(crate_path) => crate_path
            .split_once("/src/")
            .map_or(crate_path, |(_, r)| r),
        None => relative.strip_prefix("src/").unwrap_or(relative),
    };
    let first = rest.split('/').next().unwrap_or(rest);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Each module's floor (higher is above) from docs/architecture.md.
fn floors(root: &Path) -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let block = doc.split("```floors\n").nth(1).unwrap();
    let block = block.split("```").next().unwrap();
    let lines: Vec<&str> = block.lines().filter(|l| l.contains(':')).collect();
    let mut floor = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        for module in line.split(':').nth(1).unwrap().split_whitespace() {
            floor.insert(module.to_string(), lines.len() - i);
        }
    }
    floor
}

/// The string literals of a source text outside its tests (comments,
/// `#[cfg(test)]` modules and test files left out), with their lines.
fn sql_literals(text: &str) -> Vec<(usize, String)> {
    let tests = text
        .match_indices("#[cfg(test)]")
        .find(|(at, mark)| text[at + mark.len()..].trim_start().starts_with("mod "));
    let text = &text[..tests.map_or(text.len(), |(at, _)| at)];
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'\'' => {
                // A char literal ('"', '\'') or a lifetime: skip what cannot open a string.
                let close = if bytes.get(i + 1) == Some(&b'\\') {
                    i + 3
                } else {
                    i + 2
                };
                i = if bytes.get(close) == Some(&b'\'') {
                    close + 1
                } else {
                    i + 1
                };
                continue;
            }
            b'r' if (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
                && matches!(bytes.get(i + 1), Some(b'"') | Some(b'#')) =>
            {
                let hashes = text[i + 1..].chars().take_while(|c| *c == '#').count();
                if bytes.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                let end = text[body..].find(&close).map_or(bytes.len(), |n| body + n);
                out.push((start, text[body..end].to_string()));
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                out.push((start, text[i + 1..j.min(bytes.len())].to_string()));
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out.into_iter()
        .map(|(at, s)| (text[..at].matches('\n').count() + 1, s))
        .collect()
}

/// The tables one SQL literal names: after FROM, JOIN, INTO and UPDATE, in
/// a FROM list after a comma, and a literal that starts with a table and
/// goes on to joins or a condition (a `FROM` fragment kept as a const).
fn named_tables(sql: &str, known: &BTreeMap<&str, Vec<&str>>) -> Vec<String> {
    let mut tokens: Vec<&str> = Vec::new();
    for word in
        sql.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ',' || c == '(' || c == ')'))
    {
        let mut rest = word;
        while !rest.is_empty() {
            let cut = rest.find([',', '(', ')']).unwrap_or(rest.len());
            if cut == 0 {
                tokens.push(&rest[..1]);
                rest = &rest[1..];
            } else {
                tokens.push(&rest[..cut]);
                rest = &rest[cut..];
            }
        }
    }
    let fragment = sql.contains("JOIN") || sql.contains("WHERE");
    let mut tables = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if !known.contains_key(token) {
            continue;
        }
        let named = match i.checked_sub(1).map(|p| tokens[p]) {
            Some("FROM" | "JOIN" | "INTO" | "UPDATE") => true,
            Some(",") => tokens[..i - 1]
                .iter()
                .rev()
                .find(|t| {
                    matches!(
                        **t,
                        "FROM"
                            | "JOIN"
                            | "WHERE"
                            | "SELECT"
                            | "ON"
                            | "ORDER"
                            | "GROUP"
                            | "SET"
                            | "VALUES"
                            | "("
                    )
                })
                .is_some_and(|t| *t == "FROM"),
            None => fragment,
            _ => false,
        };
        if named {
            tables.push(token.to_string());
        }
    }
    tables
}

/// An area reads its own tables; a query of its own may join the rows of a
/// lower area's tables it refers to (a named read model of the area that
/// owns the query). Any other read of another area's table goes through
/// the owner's read function or read model.
#[test]
fn every_table_is_read_only_through_its_own_area() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let floor = floors(root);
    let mut owner_areas: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (table, files) in OWNERS.iter().filter(|(t, _)| !SCRATCH.contains(t)) {
        let mut areas: Vec<&str> = files.iter().map(|f| area_of(f)).collect();
        areas.dedup();
        owner_areas.insert(table, areas);
    }
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates"), &mut files);
    files.sort();
    let mut strays = std::collections::BTreeSet::new();
    let mut used = std::collections::BTreeSet::new();
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if relative.ends_with("/tests.rs") || relative.contains("/tests/") {
            continue;
        }
        let area = area_of(&relative);
        let text = std::fs::read_to_string(file).unwrap();
        for (line, sql) in sql_literals(&text) {
            let tables = named_tables(&sql, &owner_areas);
            let own = tables
                .iter()
                .any(|t| owner_areas[t.as_str()].contains(&area));
            for table in &tables {
                let owners = &owner_areas[table.as_str()];
                if owners.contains(&area) {
                    continue;
                }
                let lower = owners.iter().all(|o| floor.get(*o) < floor.get(area));
                let excepted = CROSS_AREA_EXCEPTIONS
                    .iter()
                    .any(|(f, t, _)| *f == relative && t == table);
                if excepted {
                    used.insert((relative.clone(), table.clone()));
                }
                let joined_in_own_read_model = own && lower;
                if !joined_in_own_read_model && !excepted {
                    strays.insert(format!(
                        "{relative}:{line} reads {table}, a table of {owners:?}: call its owner's \
                         read function or read model"
                    ));
                }
            }
        }
    }
    for (file, table, _) in CROSS_AREA_EXCEPTIONS {
        if !used.contains(&(file.to_string(), table.to_string())) {
            strays.insert(format!(
                "{file} no longer reads {table}: take it off CROSS_AREA_EXCEPTIONS"
            ));
        }
    }
    let strays: Vec<String> = strays.into_iter().collect();
    assert!(strays.is_empty(), "{}", strays.join("\n"));
}

#[test]
fn the_read_scan_finds_tables_and_leaves_text_alone() {
    let known: BTreeMap<&str, Vec<&str>> = [
        ("people", vec![]),
        ("schedules", vec![]),
        ("medications", vec![]),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        named_tables(
            "SELECT a FROM schedules s JOIN people p ON p.id = s.person_id",
            &known
        ),
        ["schedules", "people"]
    );
    assert_eq!(
        named_tables(
            "schedules s JOIN medications m ON m.id = s.medication_id",
            &known
        ),
        ["schedules", "medications"]
    );
    assert_eq!(
        named_tables("SELECT 1 FROM people p, medications m WHERE 1", &known),
        ["people", "medications"]
    );
    assert!(named_tables("/households/{id}/people", &known).is_empty());
    let literals = sql_literals("let a = r#\"FROM \"people\"\"#; // \"not\"\nlet b = '\"'; \"x\"");
    assert_eq!(
        literals,
        [(1, "FROM \"people\"".to_string()), (2, "x".to_string())]
    );
}

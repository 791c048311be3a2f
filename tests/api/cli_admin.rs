//! The administrator's command line (issue 17 point 1, issue 9 points 8 and
//! 10): members, tokens, households, the database check and the version, run
//! as the real binary over a temp data dir.

use std::path::Path;
use std::process::Stdio;

use pillbox::db::DATABASE_FILE;
use rusqlite::{Connection, OpenFlags};

use crate::support::process::{
    Guard, Outcome, free_port, http_get, password_line, pillbox, run, set_up_household, setup_with,
    token_create, wait_until_serving,
};

fn read_only(data: &Path) -> Connection {
    Connection::open_with_flags(data.join(DATABASE_FILE), OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the database read-only")
}

fn scalar(data: &Path, sql: &str) -> i64 {
    read_only(data).query_row(sql, [], |r| r.get(0)).unwrap()
}

/// `pillbox <command> --data-dir <data> <args>`, stdin closed.
pub(crate) fn admin(data: &Path, command: &[&str], args: &[&str]) -> Outcome {
    let mut all: Vec<&str> = command.to_vec();
    all.extend(["--data-dir", data.to_str().unwrap()]);
    all.extend_from_slice(args);
    run(pillbox(&all), None)
}

fn member_add(
    data: &Path,
    household: &str,
    email: &str,
    role: &str,
    name: Option<&str>,
) -> Outcome {
    let mut args = vec![
        "member",
        "add",
        "--data-dir",
        data.to_str().unwrap(),
        "--household",
        household,
        "--email",
        email,
        "--role",
        role,
    ];
    if let Some(name) = name {
        args.extend(["--name", name]);
    }
    run(pillbox(&args), Some(&password_line()))
}

/// (event type, actor membership id, subject id) of every audit event, oldest first.
fn audit(data: &Path) -> Vec<(String, Option<i64>, Option<i64>)> {
    read_only(data)
        .prepare("SELECT event_type, actor_membership_id, subject_id FROM audit_events ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn setup_and_member_add_always_create_the_members_own_person() {
    let (_dir, data, household) = set_up_household();
    let added = member_add(
        &data,
        &household,
        "max@example.org",
        "member",
        Some("Max Member"),
    );
    added.assert_success();
    let membership: i64 = added.single_stdout_line().parse().unwrap();

    // Both memberships are linked to a person of their name, in the household,
    // with a `self` manage grant: a profile and notification preferences like
    // any person's.
    let conn = read_only(&data);
    let linked: Vec<(i64, String, String, String)> = conn
        .prepare(
            "SELECT m.id, p.name, g.relationship_type, g.access_level
             FROM memberships m JOIN people p ON p.id = m.person_id
               AND p.household_id = m.household_id
             JOIN person_access_grants g ON g.membership_id = m.id AND g.person_id = p.id
             ORDER BY m.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(linked.len(), 2, "{linked:?}");
    assert_eq!(linked[0].1, "Olive Owner");
    assert_eq!(
        (
            linked[1].0,
            linked[1].1.as_str(),
            linked[1].2.as_str(),
            linked[1].3.as_str()
        ),
        (membership, "Max Member", "self", "manage")
    );

    // The membership `member add` made is audited, acted by no member.
    let events = audit(&data);
    assert!(
        events.contains(&("membership.created".to_string(), None, Some(membership))),
        "{events:?}"
    );

    // Through the API the new member sees their own profile and preferences.
    let token = token_create(&data, &household, "max@example.org", &[]);
    let token = token.assert_success().single_stdout_line().to_string();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
    ]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Guard(cmd.spawn().unwrap());
    wait_until_serving(&mut server, port);
    for path in ["profile", "notification_preference"] {
        let got = http_get(
            port,
            &format!("/api/v1/households/{household}/{path}"),
            Some(&token),
        )
        .unwrap();
        assert_eq!(got.status, 200, "{path}: {}", got.body);
    }
}

#[test]
fn a_member_without_a_name_is_refused_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run(
        pillbox(&[
            "setup",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            "Home",
            "--email",
            "owner@example.org",
            "--time-zone",
            "UTC",
        ]),
        Some(&password_line()),
    );
    out.assert_one_line_failure("--name");
    assert!(!data.exists(), "nothing was created");

    let (_dir, data, household) = set_up_household();
    member_add(&data, &household, "max@example.org", "member", None)
        .assert_one_line_failure("--name");
    member_add(&data, &household, "max@example.org", "member", Some("   "))
        .assert_one_line_failure("name");
    assert_eq!(scalar(&data, "SELECT count(*) FROM memberships"), 1);
    assert_eq!(scalar(&data, "SELECT count(*) FROM people"), 1);
}

#[test]
fn member_list_role_and_remove_keep_the_owner_rules() {
    let (_dir, data, household) = set_up_household();
    let h = household.as_str();
    member_add(&data, h, "max@example.org", "member", Some("Max Member")).assert_success();

    let list = admin(&data, &["member", "list"], &["--household", h]);
    list.assert_success();
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", list.stdout);
    assert!(lines[0].starts_with("ID"), "{}", lines[0]);
    assert!(lines[1].contains("owner@example.org") && lines[1].contains("owner"));
    assert!(lines[2].contains("max@example.org") && lines[2].contains("Max Member"));

    // The last owner cannot be demoted or removed.
    let role = |email: &str, role: &str| {
        admin(
            &data,
            &["member", "role"],
            &["--household", h, "--email", email, "--role", role],
        )
    };
    role("owner@example.org", "member").assert_one_line_failure("last active owner");
    admin(
        &data,
        &["member", "remove"],
        &["--household", h, "--email", "owner@example.org"],
    )
    .assert_one_line_failure("last active owner");
    assert_eq!(
        scalar(
            &data,
            "SELECT count(*) FROM memberships WHERE role = 'owner' AND status = 'active'"
        ),
        1
    );

    // Handing ownership over: promote first, then the old owner may step down.
    role("MAX@example.org", "owner").assert_success();
    role("owner@example.org", "administrator").assert_success();
    let roles: Vec<(String, String)> = read_only(&data)
        .prepare("SELECT a.email, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id ORDER BY m.id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        roles,
        [
            ("owner@example.org".to_string(), "administrator".to_string()),
            ("max@example.org".to_string(), "owner".to_string())
        ]
    );

    let token = token_create(&data, h, "owner@example.org", &[]);
    token.assert_success();
    admin(
        &data,
        &["member", "remove"],
        &["--household", h, "--email", "owner@example.org"],
    )
    .assert_success();
    assert_eq!(
        scalar(
            &data,
            "SELECT count(*) FROM app_tokens WHERE revoked_at IS NULL"
        ),
        0,
        "removal revokes the member's tokens"
    );
    assert_eq!(
        scalar(
            &data,
            "SELECT count(*) FROM person_access_grants g JOIN memberships m ON m.id = g.membership_id WHERE m.status = 'revoked' AND g.revoked_at IS NULL"
        ),
        0,
        "and their grants"
    );
    let list = admin(&data, &["member", "list"], &["--household", h]);
    assert!(
        !list.stdout.contains("owner@example.org"),
        "{}",
        list.stdout
    );

    // Every change is audited as done by no member (the host operator).
    let events: Vec<(String, Option<i64>)> =
        audit(&data).into_iter().map(|(t, a, _)| (t, a)).collect();
    assert_eq!(
        events
            .iter()
            .filter(|(t, _)| t == "membership.updated")
            .count(),
        2,
        "{events:?}"
    );
    assert!(events.contains(&("membership.revoked".to_string(), None)));
    assert!(
        events.iter().all(|(_, actor)| actor.is_none()),
        "{events:?}"
    );

    // Failures: one line, non-zero.
    role("nobody@example.org", "member").assert_one_line_failure("nobody@example.org");
    admin(&data, &["member", "list"], &["--household", "999"]).assert_one_line_failure("999");
    let bad_role = role("max@example.org", "king");
    assert!(!bad_role.status.success());
}

#[test]
fn a_member_removed_while_the_server_runs_is_refused_at_the_next_request() {
    let (_dir, data, household) = set_up_household();
    member_add(
        &data,
        &household,
        "max@example.org",
        "member",
        Some("Max Member"),
    )
    .assert_success();
    let token = token_create(&data, &household, "max@example.org", &[]);
    let token = token.assert_success().single_stdout_line().to_string();

    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
    ]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Guard(cmd.spawn().unwrap());
    wait_until_serving(&mut server, port);
    let people = format!("/api/v1/households/{household}/people");
    assert_eq!(http_get(port, &people, Some(&token)).unwrap().status, 200);

    admin(
        &data,
        &["member", "remove"],
        &["--household", &household, "--email", "max@example.org"],
    )
    .assert_success();
    let after = http_get(port, &people, Some(&token)).unwrap();
    assert_eq!(after.status, 401, "{}", after.body);
}

#[test]
fn token_list_and_revoke_never_show_a_secret() {
    let (_dir, data, household) = set_up_household();
    let h = household.as_str();
    let created = token_create(&data, h, "owner@example.org", &[]);
    let token = created.assert_success().single_stdout_line().to_string();
    let (selector, secret) = token
        .strip_prefix("pbx_app_")
        .and_then(|rest| rest.split_once('_'))
        .unwrap();

    let list = admin(&data, &["token", "list"], &["--household", h]);
    list.assert_success();
    assert!(
        list.stdout.contains(&format!("pbx_app_{selector}")),
        "{}",
        list.stdout
    );
    assert!(list.stdout.contains("laptop") && list.stdout.contains("owner@example.org"));
    assert!(
        !list.stdout.contains(secret),
        "the secret is never shown again"
    );
    assert!(!list.stderr.contains(secret));
    let id: String = list
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .into();

    admin(
        &data,
        &["token", "revoke"],
        &["--household", h, "--id", &id],
    )
    .assert_success();
    assert_eq!(
        scalar(
            &data,
            "SELECT count(*) FROM app_tokens WHERE revoked_at IS NULL"
        ),
        0
    );
    let list = admin(&data, &["token", "list"], &["--household", h]);
    assert_eq!(
        list.assert_success().stdout.lines().count(),
        1,
        "header only"
    );
    admin(
        &data,
        &["token", "revoke"],
        &["--household", h, "--id", &id],
    )
    .assert_one_line_failure("app token");
    admin(
        &data,
        &["token", "revoke"],
        &["--household", "999", "--id", &id],
    )
    .assert_one_line_failure("app token");
    let events = audit(&data);
    assert!(
        events.contains(&(
            "app_token.revoked".to_string(),
            None,
            Some(id.parse().unwrap())
        )),
        "{events:?}"
    );
}

#[test]
fn household_list_names_every_household() {
    let (_dir, data, _household) = set_up_household();
    setup_with(&data, "second@example.org", &["--another-household"]).assert_success();
    let list = admin(&data, &["household", "list"], &[]);
    list.assert_success();
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", list.stdout);
    assert!(lines[1].starts_with("1 ") && lines[1].contains("Home"));
    assert!(lines[1].contains("Europe/London"));
    assert!(lines[2].starts_with("2 "));
}

#[test]
fn commands_on_a_data_dir_without_a_database_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("typo");
    for (command, args) in [
        (&["member", "list"][..], &["--household", "1"][..]),
        (&["token", "list"], &["--household", "1"]),
        (&["household", "list"], &[]),
        (&["check"], &[]),
        (
            &["token", "create"],
            &[
                "--household",
                "1",
                "--email",
                "o@example.org",
                "--name",
                "x",
            ],
        ),
    ] {
        admin(&data, command, args).assert_one_line_failure("pillbox setup");
        assert!(!data.exists(), "{command:?} created nothing");
    }
}

#[test]
fn check_reports_a_healthy_database_and_fails_on_a_broken_one() {
    let (_dir, data, _household) = set_up_household();
    let before = std::fs::read(data.join(DATABASE_FILE)).unwrap();
    let out = admin(&data, &["check"], &[]);
    out.assert_success();
    for needle in ["(current)", "integrity: ok", "foreign keys: ok", "bytes"] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
    let households = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("households "))
        .unwrap_or_else(|| panic!("row count of households in {}", out.stdout));
    assert!(households.trim_end().ends_with(" 1"), "{households}");
    assert_eq!(
        std::fs::read(data.join(DATABASE_FILE)).unwrap(),
        before,
        "the check changes nothing"
    );

    // A row naming a household that does not exist: found, non-zero exit.
    {
        let conn = Connection::open(data.join(DATABASE_FILE)).unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO locations (portable_id, household_id, name, created_at, updated_at)
             VALUES ('orphan', 999, 'Nowhere', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');",
        )
        .unwrap();
    }
    let out = admin(&data, &["check"], &[]);
    assert!(!out.status.success());
    assert!(out.stdout.contains("foreign key"), "{}", out.stdout);
    assert!(out.stdout.contains("locations"), "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("pillbox: error: 1 problem"),
        "{}",
        lines[0]
    );
}

#[test]
fn version_prints_the_binary_and_schema_versions() {
    let out = run(pillbox(&["version"]), None);
    out.assert_success();
    let line = out.single_stdout_line();
    assert!(
        line.starts_with(&format!("pillbox {}", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    assert!(line.contains(&format!("schema {}", pillbox::db::SCHEMA_VERSION)));
}

#[test]
fn every_admin_command_has_help() {
    for args in [
        &["member", "list", "--help"][..],
        &["member", "role", "--help"],
        &["member", "remove", "--help"],
        &["token", "list", "--help"],
        &["token", "revoke", "--help"],
        &["household", "--help"],
        &["household", "list", "--help"],
        &["check", "--help"],
        &["version", "--help"],
        &["health", "--help"],
    ] {
        let out = run(pillbox(args), None);
        out.assert_success();
        assert!(
            out.stdout.contains("Usage: pillbox"),
            "{args:?}: {}",
            out.stdout
        );
    }
    let top = run(pillbox(&["--help"]), None);
    for command in ["member", "token", "household", "check", "version"] {
        assert!(top.stdout.contains(command), "{command} in {}", top.stdout);
    }
}

#[test]
fn health_answers_zero_only_while_the_server_answers() {
    let (_dir, data, _household) = set_up_household();
    let port = free_port();
    let listen = format!("0.0.0.0:{port}");
    let health = || {
        let mut cmd = pillbox(&["health"]);
        cmd.env("PILLBOX_LISTEN", &listen);
        run(cmd, None)
    };
    health().assert_one_line_failure(&format!("127.0.0.1:{port}"));

    let mut cmd = pillbox(&["serve", "--data-dir", data.to_str().unwrap()]);
    cmd.env("PILLBOX_LISTEN", &listen)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Guard(cmd.spawn().unwrap());
    wait_until_serving(&mut server, port);
    let out = health();
    out.assert_success();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}

#[test]
fn in_a_terminal_the_name_and_password_are_asked_for() {
    // util-linux `script` gives the command a terminal; without it there is
    // no terminal to test with.
    if !Path::new("/usr/bin/script").exists() {
        return;
    }
    let (_dir, data, household) = set_up_household();
    let command = format!(
        "{} member add --data-dir {} --household {household} --email max@example.org --role member",
        crate::support::process::BIN,
        data.display()
    );
    let mut cmd = std::process::Command::new("/usr/bin/script");
    cmd.args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Guard(cmd.spawn().unwrap());
    let mut stdin = child.0.stdin.take().unwrap();
    // Typed one answer at a time, as a person would after each prompt.
    let typist = std::thread::spawn(move || {
        use std::io::Write;
        for line in [
            "Max Member",
            crate::support::process::PASSWORD,
            crate::support::process::PASSWORD,
        ] {
            std::thread::sleep(std::time::Duration::from_millis(300));
            writeln!(stdin, "{line}").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    });
    let status = child
        .wait_for_exit(crate::support::process::DEADLINE)
        .expect("member add finishes");
    typist.join().unwrap();
    let (transcript, _) = child.read_all();
    assert!(status.success(), "{transcript}");
    for prompt in [
        "The member's name",
        "New password (at least 12 characters)",
        "Repeat the password",
    ] {
        assert!(transcript.contains(prompt), "{prompt} in {transcript}");
    }
    let name: String = read_only(&data)
        .query_row(
            "SELECT p.name FROM memberships m JOIN accounts a ON a.id = m.account_id
             JOIN people p ON p.id = m.person_id WHERE a.email = 'max@example.org'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(name, "Max Member");
}

//! The command line as a process: the real binary over a temp data dir, with
//! passwords piped on stdin (not a terminal, so the binary reads one line).
//! Every child is killed by a guard, so a failing test never leaves a server
//! running, and every wait has a deadline.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use pillbox::db::DATABASE_FILE;
use rusqlite::{Connection, OpenFlags};

use crate::support::process::{
    Guard, count_rows, free_port, http_get, password_line, pillbox, run, set_up_household,
    setup_in, setup_with, token_create, wait_until_serving,
};

/// A table's row count, read through a read-only connection.
fn count(data: &Path, table: &str) -> i64 {
    count_rows(data, &format!("SELECT count(*) FROM {table}"))
}

fn counts(data: &Path) -> [i64; 3] {
    [
        count(data, "households"),
        count(data, "accounts"),
        count(data, "memberships"),
    ]
}

#[test]
fn setup_prints_the_household_id_and_refuses_an_existing_email() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let first = setup_in(&data, "owner@example.org");
    first.assert_success();
    let id: i64 = first
        .single_stdout_line()
        .parse()
        .expect("stdout is the household id alone");
    assert!(id > 0);
    assert!(data.join(DATABASE_FILE).exists());
    assert_eq!(counts(&data), [1, 1, 1]);
    let (name, zone): (String, String) =
        Connection::open_with_flags(data.join(DATABASE_FILE), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap()
            .query_row(
                "SELECT name, time_zone FROM households WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
    assert_eq!((name.as_str(), zone.as_str()), ("Home", "Europe/London"));

    // Again: a second household is only made when asked for (issue 17).
    let again = setup_in(&data, "second@example.org");
    again.assert_one_line_failure("--another-household");
    assert_eq!(
        counts(&data),
        [1, 1, 1],
        "no second household, account or membership"
    );

    // Asked for, with the same email: one clear line, and nothing changes.
    let again = setup_with(&data, "owner@example.org", &["--another-household"]);
    again.assert_one_line_failure("owner@example.org");
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(
        counts(&data),
        [1, 1, 1],
        "no second household, account or membership"
    );

    // Asked for, with a new email: household 2.
    let second = setup_with(&data, "second@example.org", &["--another-household"]);
    second.assert_success();
    assert_eq!(second.single_stdout_line(), (id + 1).to_string());
    assert_eq!(counts(&data), [2, 2, 2]);
}

#[test]
fn setup_rejects_a_short_password_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run(
        pillbox(&[
            "setup",
            "--name",
            "Olive Owner",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            "Home",
            "--email",
            "owner@example.org",
            "--time-zone",
            "Europe/London",
        ]),
        Some("elevenchars\n"),
    );
    out.assert_one_line_failure("12 characters");
    assert!(!data.exists(), "no data dir or database was created");

    // Nor is an existing database touched.
    let (_dir, data, _id) = set_up_household();
    let out = run(
        pillbox(&[
            "setup",
            "--name",
            "Olive Owner",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            "Second",
            "--email",
            "second@example.org",
        ]),
        Some("short\n"),
    );
    out.assert_one_line_failure("12 characters");
    assert_eq!(counts(&data), [1, 1, 1]);
}

#[test]
fn setup_rejects_an_empty_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run(
        pillbox(&[
            "setup",
            "--name",
            "Olive Owner",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            "Home",
            "--email",
            "owner@example.org",
        ]),
        Some(""),
    );
    out.assert_one_line_failure("password");
    assert!(!data.exists());
}

#[test]
fn setup_rejects_an_unknown_time_zone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run(
        pillbox(&[
            "setup",
            "--name",
            "Olive Owner",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            "Home",
            "--email",
            "owner@example.org",
            "--time-zone",
            "Mars/Olympus_Mons",
        ]),
        Some(&password_line()),
    );
    out.assert_one_line_failure("Mars/Olympus_Mons");
    assert!(!data.exists(), "nothing was created");
}

#[test]
fn setup_reads_the_data_dir_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("from-env");
    let cwd = dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let mut cmd = pillbox(&[
        "setup",
        "--name",
        "Olive Owner",
        "--household",
        "Home",
        "--email",
        "owner@example.org",
        "--time-zone",
        "UTC",
    ]);
    cmd.env("PILLBOX_DATA_DIR", &data).current_dir(&cwd);
    let out = run(cmd, Some(&password_line()));
    out.assert_success();
    out.single_stdout_line().parse::<i64>().unwrap();
    assert!(
        data.join(DATABASE_FILE).exists(),
        "database under PILLBOX_DATA_DIR"
    );
    assert!(
        !cwd.join("pillbox-data").exists(),
        "the default ./pillbox-data was not used"
    );
    assert_eq!(counts(&data), [1, 1, 1]);
}

#[test]
fn member_add_creates_an_account_and_membership() {
    let (_dir, data, household) = set_up_household();
    let d = data.to_str().unwrap();
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--name",
            "Max Member",
            "--data-dir",
            d,
            "--household",
            &household,
            "--email",
            "m@example.org",
            "--role",
            "member",
        ]),
        Some(&password_line()),
    );
    out.assert_success();
    out.single_stdout_line()
        .parse::<i64>()
        .expect("stdout is the membership id");
    assert_eq!(counts(&data), [1, 2, 2]);

    // The new member can be given a token.
    let token = token_create(&data, &household, "m@example.org", &[]);
    token.assert_success();
    assert!(token.single_stdout_line().starts_with("pbx_app_"));

    // An administrator too.
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--name",
            "Max Member",
            "--data-dir",
            d,
            "--household",
            &household,
            "--email",
            "admin@example.org",
            "--role",
            "administrator",
        ]),
        Some(&password_line()),
    );
    out.assert_success();
    assert_eq!(counts(&data), [1, 3, 3]);

    // The same email twice fails clearly and changes nothing.
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--name",
            "Max Member",
            "--data-dir",
            d,
            "--household",
            &household,
            "--email",
            "m@example.org",
            "--role",
            "member",
        ]),
        Some(&password_line()),
    );
    out.assert_one_line_failure("m@example.org");
    assert_eq!(counts(&data), [1, 3, 3]);

    // An unknown household.
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--name",
            "Max Member",
            "--data-dir",
            d,
            "--household",
            "999999",
            "--email",
            "x@example.org",
            "--role",
            "member",
        ]),
        Some(&password_line()),
    );
    out.assert_one_line_failure("household");
    assert_eq!(counts(&data), [1, 3, 3]);
}

#[test]
fn member_add_cannot_make_an_owner() {
    let (_dir, data, household) = set_up_household();
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--name",
            "Max Member",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            &household,
            "--email",
            "m@example.org",
            "--role",
            "owner",
        ]),
        Some(&password_line()),
    );
    assert!(!out.status.success());
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(out.stderr.contains("'owner'"), "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(counts(&data), [1, 1, 1]);
}

#[test]
fn token_create_prints_the_token_alone() {
    let (_dir, data, household) = set_up_household();
    let out = token_create(&data, &household, "owner@example.org", &[]);
    out.assert_success();
    let token = out.single_stdout_line();
    assert!(token.starts_with("pbx_app_"), "{token}");
    assert!(!token.contains(char::is_whitespace));

    let out = token_create(
        &data,
        &household,
        "owner@example.org",
        &["--max-age-days", "30"],
    );
    out.assert_success();
    let second = out.single_stdout_line();
    assert!(second.starts_with("pbx_app_"));
    assert_ne!(second, token, "every token is new");
    assert_eq!(count(&data, "app_tokens"), 2);

    // Only hashes are stored: the secret is nowhere in the database file.
    let bytes = std::fs::read(data.join(DATABASE_FILE)).unwrap();
    let (_, secret) = token
        .strip_prefix("pbx_app_")
        .and_then(|rest| rest.split_once('_'))
        .expect("pbx_app_<id>_<secret>");
    assert!(secret.len() >= 32, "{token}");
    let secret = secret.as_bytes();
    assert!(!bytes.windows(secret.len()).any(|w| w == secret));
}

#[test]
fn token_create_fails_clearly() {
    let (_dir, data, household) = set_up_household();
    token_create(&data, &household, "nobody@example.org", &[])
        .assert_one_line_failure("nobody@example.org");
    token_create(&data, "999999", "owner@example.org", &[]).assert_one_line_failure("999999");
    token_create(
        &data,
        &household,
        "owner@example.org",
        &["--max-age-days", "0"],
    )
    .assert_one_line_failure("max_age_days");
    assert_eq!(count(&data, "app_tokens"), 0);
}

#[test]
fn help_works_on_every_command() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["setup", "--help"],
        &["member", "--help"],
        &["member", "add", "--help"],
        &["token", "--help"],
        &["token", "create", "--help"],
    ] {
        let out = run(pillbox(args), None);
        out.assert_success();
        assert!(
            out.stdout.contains("Usage: pillbox"),
            "{args:?}: {}",
            out.stdout
        );
        assert!(
            !out.stdout.contains("--password"),
            "{args:?}: secrets never travel as arguments"
        );
    }
    let out = run(pillbox(&["serve", "--help"]), None);
    for flag in [
        "--data-dir",
        "--listen",
        "--public-url",
        "--rate-limit",
        "PILLBOX_DATA_DIR",
        "PILLBOX_LISTEN",
        "PILLBOX_PUBLIC_URL",
    ] {
        assert!(out.stdout.contains(flag), "serve --help mentions {flag}");
    }
}

// ---- serve ---------------------------------------------------------------

#[test]
fn serve_answers_on_a_free_port_and_stops_on_sigterm() {
    let (_dir, data, household) = set_up_household();
    let token = token_create(&data, &household, "owner@example.org", &[]);
    token.assert_success();
    let token = token.single_stdout_line().to_string();

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
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut server = Guard(cmd.spawn().expect("spawn pillbox serve"));
    wait_until_serving(&mut server, port);

    let capabilities = http_get(port, "/api/v1/capabilities", None).unwrap();
    assert_eq!(capabilities.status, 200, "{}", capabilities.body);
    assert!(capabilities.json().is_object());

    let people_path = format!("/api/v1/households/{household}/people");
    let people = http_get(port, &people_path, Some(&token)).unwrap();
    assert_eq!(people.status, 200, "{}", people.body);
    assert!(people.json()["data"].is_array(), "{}", people.body);
    assert_eq!(people.header("cache-control"), Some("no-store"));

    let anonymous = http_get(port, &people_path, None).unwrap();
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    assert_eq!(anonymous.json()["error"]["code"], "unauthorized");
    assert!(anonymous.header("x-request-id").is_some());

    // SIGTERM: a graceful stop with status 0.
    let pid = server.0.id().to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let status = server
        .wait_for_exit(Duration::from_secs(10))
        .expect("serve stops within 10 s of SIGTERM");
    let (stdout, stderr) = server.read_all();
    assert!(status.success(), "exit status {status}; log: {stderr}");
    assert_eq!(stdout, "", "serve logs to stderr only");

    // One start-up line says where it listens and where the data is.
    let start: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("listening on"))
        .collect();
    assert_eq!(start.len(), 1, "one start-up line in {stderr}");
    assert!(start[0].contains(&listen), "{}", start[0]);
    assert!(
        start[0].contains(data.to_str().unwrap()),
        "start-up line names the data dir: {}",
        start[0]
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour escapes when stderr is not a terminal: {stderr:?}"
    );
    assert!(stderr.contains("shutting down"), "{stderr}");
}

#[test]
fn serve_fails_clearly_when_the_port_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let out = run(
        pillbox(&[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &listen,
        ]),
        None,
    );
    out.assert_one_line_failure(&listen);
    drop(taken);
}

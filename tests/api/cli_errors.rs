//! Start-up and set-up errors a person can act on (issue 17 point 2): each
//! is one line naming what is wrong, and leaves what it found untouched.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use pillbox::db::DATABASE_FILE;
use rusqlite::Connection;

use crate::support::process::{
    Guard, Outcome, free_port, http_get, password_line, pillbox, run, set_up_household,
    wait_until_serving,
};

fn setup_args(data: &Path, email: &str) -> Vec<String> {
    [
        "setup",
        "--data-dir",
        data.to_str().unwrap(),
        "--household",
        "Home",
        "--email",
        email,
        "--time-zone",
        "UTC",
        "--name",
        "Olive Owner",
    ]
    .map(String::from)
    .to_vec()
}

fn setup(data: &Path, email: &str) -> Outcome {
    let args = setup_args(data, email);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(pillbox(&args), Some(&password_line()))
}

/// Runs `serve` briefly over `data` on a free port; returns its outcome
/// when it fails at start (a start that succeeds is a test failure).
fn serve_fails(data: &Path) -> Outcome {
    let listen = format!("127.0.0.1:{}", free_port());
    run(
        pillbox(&[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &listen,
        ]),
        None,
    )
}

fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|uid| uid.parse().ok())
        .unwrap()
}

#[test]
fn a_data_dir_that_is_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "not a directory").unwrap();
    serve_fails(&file).assert_one_line_failure("is a file, not a directory");
    setup(&file, "owner@example.org").assert_one_line_failure("is a file, not a directory");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[test]
fn an_unwritable_data_dir_names_the_directory_and_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555)).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let serve = [
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
    ];
    // Root writes anywhere: run the binary as nobody then, as a service
    // user would be.
    let (out, user) = if effective_uid() == 0 {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            crate::support::process::BIN,
        ])
        .args(serve);
        (run(cmd, None), "uid 65534")
    } else {
        (run(pillbox(&serve), None), "uid ")
    };
    out.assert_one_line_failure("permission denied");
    assert!(
        out.stderr.contains(data.to_str().unwrap()),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(user), "names the user: {}", out.stderr);
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn a_sqlite_file_of_another_program_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let path = data.join(DATABASE_FILE);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    serve_fails(&data).assert_one_line_failure("not a Pillbox database");
    setup(&data, "owner@example.org").assert_one_line_failure("not a Pillbox database");
    run(
        pillbox(&["check", "--data-dir", data.to_str().unwrap()]),
        None,
    )
    .assert_one_line_failure("not a Pillbox database");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is untouched"
    );
    let names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [DATABASE_FILE], "no -wal or -shm beside it");

    // A file that is not SQLite at all.
    std::fs::write(&path, "plain text, not a database at all".repeat(200)).unwrap();
    let before = std::fs::read(&path).unwrap();
    serve_fails(&data).assert_one_line_failure("not a Pillbox database");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn setup_with_an_invalid_email_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    setup(&data, "not-an-email").assert_one_line_failure("--email");
    assert!(!data.exists(), "no data directory was created");

    // Nor does it change an existing one.
    let (_dir, data, household) = set_up_household();
    let before = std::fs::read(data.join(DATABASE_FILE)).unwrap();
    let out = run(
        pillbox(&[
            "member",
            "add",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            &household,
            "--email",
            "nobody at example.org",
            "--role",
            "member",
            "--name",
            "Max",
        ]),
        Some(&password_line()),
    );
    out.assert_one_line_failure("--email");
    assert!(!out.stderr.contains("nobody at"), "the value is not echoed");
    assert_eq!(std::fs::read(data.join(DATABASE_FILE)).unwrap(), before);
}

#[test]
fn serve_resolves_a_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let listen = format!("localhost:{port}");
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
    let got = http_get(port, "/api/v1/capabilities", None).unwrap();
    assert_eq!(got.status, 200);

    for bad in ["localhost", "no-such-host.invalid:8080"] {
        let out = run(
            pillbox(&[
                "serve",
                "--data-dir",
                data.to_str().unwrap(),
                "--listen",
                bad,
            ]),
            None,
        );
        assert!(!out.status.success(), "{bad}");
        assert!(
            out.stderr.contains(bad) || out.stderr.contains("HOST:PORT"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn root_is_sent_to_the_user_owning_the_data_dir() {
    if effective_uid() != 0 {
        // Only root can run commands on another user's data directory.
        return;
    }
    let (_dir, data, household) = set_up_household();
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534", data.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(chown.success());
    let before: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    for args in [
        &["member", "list", "--household", &household][..],
        &["serve", "--listen", "127.0.0.1:1"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--data-dir", data.to_str().unwrap()]);
        let out = run(pillbox(&all), None);
        out.assert_one_line_failure("belongs to the user");
        assert!(out.stderr.contains("uid 65534"), "{}", out.stderr);
        assert!(out.stderr.contains("sudo -u "), "{}", out.stderr);
    }
    let after: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "no file made as root");
    // The read-only check creates nothing, so root may run it.
    run(
        pillbox(&["check", "--data-dir", data.to_str().unwrap()]),
        None,
    )
    .assert_success();
}

//! Files holding health data are private whatever the umask: the real
//! binary, started with umask 000, creates its data directory and backup
//! directory 0700 and the database, its -wal and -shm, the MFA key,
//! scheduled backups and what `backup`, `export` and `restore` write 0600;
//! `check` and `serve` warn about a data directory others can read.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pillbox::db::DATABASE_FILE;

use crate::support::process::PASSPHRASE_LINE;
use crate::support::process::{
    DEADLINE, Outcome, free_port, password_line, pillbox, run, serve, serve_with, set_up_household,
};

/// The child starts with umask 000: every mode below is the one the binary
/// set, none the umask took away.
fn loose_umask(cmd: &mut Command) {
    // SAFETY: umask(2) is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::umask(rustix::fs::Mode::empty());
            Ok(())
        });
    }
}

fn loose(args: &[&str], stdin: Option<&str>) -> Outcome {
    let mut cmd = pillbox(args);
    loose_umask(&mut cmd);
    run(cmd, stdin)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[track_caller]
fn assert_mode(path: &Path, expected: u32) {
    assert_eq!(
        mode(path),
        expected,
        "{} is {:o}, not {expected:o}",
        path.display(),
        mode(path)
    );
}

fn first_backup_in(dir: &Path) -> PathBuf {
    let end = Instant::now() + DEADLINE;
    loop {
        let found = std::fs::read_dir(dir).ok().and_then(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "sqlite3"))
        });
        if let Some(path) = found {
            return path;
        }
        assert!(
            Instant::now() < end,
            "no scheduled backup in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_file_holding_health_data_is_private_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let text = |p: &Path| p.to_str().unwrap().to_string();
    let setup = loose(
        &[
            "setup",
            "--data-dir",
            &text(&data),
            "--household",
            "Home",
            "--email",
            "owner@example.org",
            "--time-zone",
            "Europe/London",
            "--name",
            "Olive Owner",
        ],
        Some(&password_line()),
    );
    setup.assert_success();
    let household = setup.single_stdout_line().to_string();
    assert_mode(&data, 0o700);
    assert_mode(&data.join(DATABASE_FILE), 0o600);

    let scheduled = dir.path().join("scheduled");
    let server = serve_with(&data, free_port(), &dir.path().join("serve.log"), |cmd| {
        loose_umask(cmd);
        cmd.args(["--backup-dir", &text(&scheduled), "--backup-interval", "1s"]);
    });
    for name in [
        DATABASE_FILE.to_string(),
        format!("{DATABASE_FILE}-wal"),
        format!("{DATABASE_FILE}-shm"),
        "mfa-secret.key".to_string(),
    ] {
        assert_mode(&data.join(name), 0o600);
    }
    let backup = first_backup_in(&scheduled);
    assert_mode(&scheduled, 0o700);
    assert_mode(&backup, 0o600);
    drop(server);

    let plain = dir.path().join("copy.sqlite3");
    let zipped = dir.path().join("copy.zip");
    for out in [&plain, &zipped] {
        loose(
            &["backup", "--data-dir", &text(&data), "--out", &text(out)],
            None,
        )
        .assert_success();
        assert_mode(out, 0o600);
    }
    let bundle = dir.path().join("home.bundle.json");
    loose(
        &[
            "export",
            "--data-dir",
            &text(&data),
            "--household",
            &household,
            "--out",
            &text(&bundle),
        ],
        Some(PASSPHRASE_LINE),
    )
    .assert_success();
    assert_mode(&bundle, 0o600);

    // Over the existing database, and into a data directory it creates,
    // from a backup that is itself readable by anyone.
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    for target in [&data, &elsewhere] {
        loose(
            &["restore", "--data-dir", &text(target), &text(&plain)],
            None,
        )
        .assert_success();
        assert_mode(target, 0o700);
        assert_mode(&target.join(DATABASE_FILE), 0o600);
    }
    loose(
        &["restore", "--data-dir", &text(&data), &text(&zipped)],
        None,
    )
    .assert_success();
    assert_mode(&data.join(DATABASE_FILE), 0o600);
}

#[test]
fn check_and_serve_warn_once_when_others_can_read_the_data() {
    let (dir, data, _) = set_up_household();
    let chmod = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let check = || {
        run(
            pillbox(&["check", "--data-dir", data.to_str().unwrap()]),
            None,
        )
    };
    let quiet = check();
    quiet.assert_success();
    assert_eq!(quiet.stderr, "", "a private data directory: no warning");

    chmod(&data, 0o755);
    chmod(&data.join(DATABASE_FILE), 0o644);
    let warned = check();
    warned.assert_success();
    let lines: Vec<&str> = warned.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {:?}", warned.stderr);
    assert!(
        lines[0].starts_with("pillbox: warning: ")
            && lines[0].contains("mode 755")
            && lines[0].contains(&format!("chmod 700 {}", data.display()))
            && lines[0].contains("chmod 600"),
        "{}",
        lines[0]
    );

    let log = dir.path().join("serve.log");
    let _server = serve(&data, free_port(), &log);
    // The server's log thread writes its lines soon after they are logged.
    let end = Instant::now() + DEADLINE;
    let logged = loop {
        let logged = std::fs::read_to_string(&log).unwrap();
        if logged.contains("listening on") || Instant::now() >= end {
            break logged;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let warnings: Vec<&str> = logged.lines().filter(|l| l.contains("chmod 700")).collect();
    assert_eq!(warnings.len(), 1, "{logged}");
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
}

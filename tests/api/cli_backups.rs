//! `pillbox backup`, `restore`, `export` and `import` as processes: a
//! backup taken while clients write, restored once the server is stopped;
//! bundles through the command line with the passphrase on stdin; and an
//! import killed at random moments never leaving part of itself behind.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pillbox::db::DATABASE_FILE;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use crate::support::process::PASSPHRASE_LINE;
use crate::support::process::{
    Guard, free_port, http_get, http_request, pillbox, run, serve, set_up_household, token_create,
};

fn read_only(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

fn count(path: &Path, table: &str) -> i64 {
    read_only(path)
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_backup_taken_while_clients_write_is_whole_and_restores_once_the_server_stops() {
    let (dir, data, household) = set_up_household();
    let token = token_create(&data, &household, "owner@example.org", &[]);
    token.assert_success();
    let token = token.single_stdout_line().to_string();
    let port = free_port();
    let mut server = serve(&data, port, &dir.path().join("serve.log"));

    // A client keeps adding people while the backup runs.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, token, household) = (stop.clone(), token.clone(), household.clone());
        std::thread::spawn(move || {
            let mut written = 0;
            while !stop.load(Ordering::Relaxed) && written < 2000 {
                let body = json!({"person": {"name": format!("P{written}"), "date_of_birth": "1990-01-01"}})
                    .to_string();
                let got = http_request(
                    port,
                    "POST",
                    &format!("/api/v1/households/{household}/people"),
                    Some(&token),
                    &[("Content-Type", "application/json")],
                    Some(&body),
                );
                if got.is_ok_and(|r| r.status == 201) {
                    written += 1;
                }
            }
            written
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let backup = dir.path().join("backup.sqlite3");
    let out = run(
        pillbox(&[
            "backup",
            "--data-dir",
            data.to_str().unwrap(),
            "--out",
            backup.to_str().unwrap(),
        ]),
        None,
    );
    out.assert_success();
    assert!(out.stdout.contains("integrity ok"), "{}", out.stdout);
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(written > 0);
    let check: String = read_only(&backup)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let people_in_backup = count(&backup, "people");
    assert!(people_in_backup >= 1);

    // Not while the server runs.
    let refused = run(
        pillbox(&[
            "restore",
            "--data-dir",
            data.to_str().unwrap(),
            backup.to_str().unwrap(),
        ]),
        None,
    );
    refused.assert_one_line_failure("running");

    server_stop(&mut server);
    let restored = run(
        pillbox(&[
            "restore",
            "--data-dir",
            data.to_str().unwrap(),
            backup.to_str().unwrap(),
        ]),
        None,
    );
    restored.assert_success();
    assert!(restored.stdout.contains("kept at"), "{}", restored.stdout);
    let kept: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".replaced-"))
        .collect();
    assert!(!kept.is_empty());

    // The restored server serves the backup's data.
    let port = free_port();
    let _server = serve(&data, port, &dir.path().join("serve2.log"));
    let got = http_get(
        port,
        &format!("/api/v1/households/{household}/people?per_page=1"),
        Some(&token),
    )
    .unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["meta"]["total_count"], people_in_backup);
}

fn server_stop(server: &mut Guard) {
    let _ = server.0.kill();
    let _ = server.0.wait();
}

#[test]
fn restore_refuses_a_newer_schema_and_a_damaged_file() {
    let (dir, data, _household) = set_up_household();
    let newer = dir.path().join("newer.sqlite3");
    std::fs::copy(data.join(DATABASE_FILE), &newer).unwrap();
    Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 9999;")
        .unwrap();
    run(
        pillbox(&[
            "restore",
            "--data-dir",
            data.to_str().unwrap(),
            newer.to_str().unwrap(),
        ]),
        None,
    )
    .assert_one_line_failure("newer");
    let damaged = dir.path().join("damaged.sqlite3");
    std::fs::write(&damaged, b"not a database at all, just text").unwrap();
    let out = run(
        pillbox(&[
            "restore",
            "--data-dir",
            data.to_str().unwrap(),
            damaged.to_str().unwrap(),
        ]),
        None,
    );
    assert!(!out.status.success());
    // The database in place is untouched.
    assert_eq!(count(&data.join(DATABASE_FILE), "households"), 1);
}

#[test]
fn export_and_import_move_a_household_through_the_command_line() {
    let (dir, source, household) = set_up_household();
    let bundle = dir.path().join("home.bundle.json");
    let exported = run(
        pillbox(&[
            "export",
            "--data-dir",
            source.to_str().unwrap(),
            "--household",
            &household,
            "--out",
            bundle.to_str().unwrap(),
            "--v2",
        ]),
        Some(PASSPHRASE_LINE),
    );
    exported.assert_success();
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.contains("service.portable.encrypted.v1"));
    assert!(!text.contains("Olive Owner"));

    let (_dir2, destination, household2) = set_up_household();
    let people_before = count(&destination.join(DATABASE_FILE), "people");
    let import = |dry: bool, stdin: &str| {
        let mut args = vec![
            "import",
            "--data-dir",
            destination.to_str().unwrap(),
            "--household",
            &household2,
            bundle.to_str().unwrap(),
        ];
        if dry {
            args.push("--dry-run");
        }
        run(pillbox(&args), Some(stdin))
    };
    let dry = import(true, PASSPHRASE_LINE);
    dry.assert_success();
    assert!(
        dry.stdout.starts_with("dry run of service.portable.v2"),
        "{}",
        dry.stdout
    );
    assert_eq!(
        count(&destination.join(DATABASE_FILE), "people"),
        people_before
    );
    import(false, "not the right passphrase\n").assert_one_line_failure("bundle");
    import(false, "short\n").assert_one_line_failure("passphrase");
    import(false, PASSPHRASE_LINE).assert_success();
    assert_eq!(
        count(&destination.join(DATABASE_FILE), "people"),
        people_before + 1
    );
    // There is no flag for a passphrase.
    let flag = run(
        pillbox(&[
            "export",
            "--data-dir",
            source.to_str().unwrap(),
            "--household",
            &household,
            "--out",
            bundle.to_str().unwrap(),
            "--passphrase",
            "x",
        ]),
        None,
    );
    assert!(!flag.status.success());
}

#[test]
fn an_import_killed_at_any_moment_leaves_nothing_partial() {
    let (dir, data, household) = set_up_household();
    // A bundle of one person with 3,000 takes, sealed as an export would.
    let person = "0199b0a0-0000-7000-8000-00000000a001";
    let medication = "0199b0a0-0000-7000-8000-00000000a002";
    let schedule = "0199b0a0-0000-7000-8000-00000000a003";
    let takes: Vec<_> = (0..3000)
        .map(|i| {
            json!({"portable_id": format!("0199b0a0-0000-7000-8001-{i:012}"),
                "client_uuid": null, "source_type": "schedule", "source_portable_id": schedule,
                "taken_at": format!("2026-0{}-{:02}T{:02}:{:02}:00Z", 1 + i / 600, 1 + (i / 24) % 25, i % 24, i % 60),
                "dose_amount": "1", "dose_unit": "tablet",
                "taken_from_medication_portable_id": medication,
                "taken_from_location_portable_id": null})
        })
        .collect();
    let payload = json!({"format": "service.portable.v1", "records": {
        "people": [{"portable_id": person, "name": "Ada", "email": null,
            "date_of_birth": "1950-01-01", "person_type": "adult", "has_capacity": true,
            "location_portable_ids": [], "notification_preference_portable_id": null}],
        "medications": [{"portable_id": medication, "location_portable_id": null,
            "name": "Paracetamol", "friendly_name": null, "category": null, "description": null,
            "dose_amount": "1", "dose_unit": "tablet", "default_schedule_type": null,
            "current_supply": "10", "reorder_threshold": null, "barcode": null, "dmd_code": null,
            "dmd_system": null, "dmd_concept_class": null}],
        "schedules": [{"portable_id": schedule, "source_dosage_option_portable_id": null,
            "retired_at": null, "person_portable_id": person, "medication_portable_id": medication,
            "dose_amount": "1", "dose_unit": "tablet", "frequency": null, "dose_cycle": null,
            "max_daily_doses": null, "min_hours_between_doses": null, "schedule_type": "prn",
            "schedule_config": {}, "start_date": "2026-01-01", "end_date": null, "active": true,
            "notes": null}],
        "medication_takes": takes,
    }});
    let passphrase =
        pillbox::portable::envelope::Passphrase::new(Some(PASSPHRASE_LINE.trim())).unwrap();
    let sealed =
        pillbox::portable::envelope::seal(payload.to_string().into_bytes(), &passphrase).unwrap();
    let bundle = dir.path().join("big.bundle.json");
    std::fs::write(&bundle, serde_json::to_vec(&sealed).unwrap()).unwrap();
    let database = data.join(DATABASE_FILE);

    for delay in [150u64, 400, 800, 1200, 1800] {
        let mut cmd = pillbox(&[
            "import",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            &household,
            bundle.to_str().unwrap(),
        ]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = Guard(cmd.spawn().unwrap());
        {
            use std::io::Write;
            let mut pipe = child.0.stdin.take().unwrap();
            let _ = pipe.write_all(PASSPHRASE_LINE.as_bytes());
        }
        std::thread::sleep(Duration::from_millis(delay));
        // SIGKILL: no chance to clean up.
        let _ = child.0.kill();
        let _ = child.0.wait();
        let takes = count(&database, "medication_takes");
        assert!(
            takes == 0 || takes == 3000,
            "a partial import of {takes} takes"
        );
        if takes == 3000 {
            assert_eq!(count(&database, "people"), 2);
            return;
        }
        assert_eq!(count(&database, "people"), 1);
    }
}

#[test]
fn the_server_takes_scheduled_backups_prunes_them_and_shows_a_failing_schedule() {
    use crate::support::process::wait_until_serving;
    let (dir, data, _household) = set_up_household();
    let backups = dir.path().join("backups");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
    ]);
    cmd.env("PILLBOX_BACKUP_DIR", &backups)
        .env("PILLBOX_BACKUP_INTERVAL", "1s")
        .env("PILLBOX_BACKUP_KEEP", "2")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut server = Guard(cmd.spawn().unwrap());
    wait_until_serving(&mut server, port);
    // Every second a backup; after four seconds three or more were taken
    // and the newest two are kept.
    let started = std::time::Instant::now();
    let files = loop {
        let mut files: Vec<_> = std::fs::read_dir(&backups)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        let waited = started.elapsed();
        if (files.len() == 2 && waited > Duration::from_secs(4)) || waited > Duration::from_secs(15)
        {
            break files;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(files.len(), 2, "{files:?}");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("pillbox-") && name.ends_with("Z.sqlite3"),
            "{name}"
        );
        let check: String = read_only(file)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
    let caps = http_get(port, "/api/v1/capabilities", None).unwrap().json();
    assert_eq!(caps["data"]["backups"]["scheduled"], true);
    assert_eq!(caps["data"]["backups"]["scheduled_failing"], false);
    server_stop(&mut server);

    // A backup directory that cannot be one: the failure shows.
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, b"a file").unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
        "--backup-dir",
        blocked.to_str().unwrap(),
        "--backup-interval",
        "1s",
    ]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut server = Guard(cmd.spawn().unwrap());
    wait_until_serving(&mut server, port);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let caps = http_get(port, "/api/v1/capabilities", None).unwrap().json();
        if caps["data"]["backups"]["scheduled_failing"] == true {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the failure never showed: {caps}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_backup_named_zip_is_the_database_inside_a_zip_and_restores() {
    let (dir, data, _household) = set_up_household();
    let zipped = dir.path().join("pillbox-backup.zip");
    let out = run(
        pillbox(&[
            "backup",
            "--data-dir",
            data.to_str().unwrap(),
            "--out",
            zipped.to_str().unwrap(),
        ]),
        None,
    );
    out.assert_success();
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zipped).unwrap()).unwrap();
    assert!(archive.by_name(DATABASE_FILE).is_ok());
    let restored = run(
        pillbox(&[
            "restore",
            "--data-dir",
            data.to_str().unwrap(),
            zipped.to_str().unwrap(),
        ]),
        None,
    );
    restored.assert_success();
    assert_eq!(count(&data.join(DATABASE_FILE), "households"), 1);
}

/// Without a terminal the long commands draw no progress line: stderr
/// stays empty and stdout holds only their result, one clean line for a
/// backup, a restore and an export.
#[test]
fn long_commands_print_only_their_result_without_a_terminal() {
    let (dir, data, household) = set_up_household();
    let data_dir = data.to_str().unwrap();
    let clean = |outcome: &crate::support::process::Outcome, lines: usize| {
        outcome.assert_success();
        assert_eq!(outcome.stderr, "", "nothing but the result");
        assert!(!outcome.stdout.contains('\r') && !outcome.stdout.contains('\x1b'));
        assert_eq!(outcome.stdout.lines().count(), lines, "{}", outcome.stdout);
    };
    let copy = dir.path().join("copy.sqlite3");
    let backup = run(
        pillbox(&[
            "backup",
            "--data-dir",
            data_dir,
            "--out",
            copy.to_str().unwrap(),
        ]),
        None,
    );
    clean(&backup, 1);
    assert!(backup.stdout.starts_with("backup written to "));
    let restored_dir = dir.path().join("restored");
    let restore = run(
        pillbox(&[
            "restore",
            "--data-dir",
            restored_dir.to_str().unwrap(),
            copy.to_str().unwrap(),
        ]),
        None,
    );
    clean(&restore, 1);
    let bundle = dir.path().join("home.bundle.json");
    let export = run(
        pillbox(&[
            "export",
            "--data-dir",
            data_dir,
            "--household",
            &household,
            "--out",
            bundle.to_str().unwrap(),
            "--v2",
        ]),
        Some(PASSPHRASE_LINE),
    );
    clean(&export, 1);
    let import = run(
        pillbox(&[
            "import",
            "--data-dir",
            data_dir,
            "--household",
            &household,
            bundle.to_str().unwrap(),
            "--dry-run",
        ]),
        Some(PASSPHRASE_LINE),
    );
    import.assert_success();
    assert_eq!(import.stderr, "");
    assert!(!import.stdout.contains('\r') && !import.stdout.contains('\x1b'));
    assert!(import.stdout.starts_with("dry run of service.portable.v2"));
}

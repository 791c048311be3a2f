//! The README's First run, pasted in order (issue 17 point 4): its shell
//! block is taken from README.md and run by bash as one script, with the
//! built binary on the PATH as `pillbox` in place of step 1's `cargo
//! install`, and the port 8080 moved to a free one (in the URLs, and by
//! PILLBOX_LISTEN for the server) so parallel tests and a developer's own
//! server do not collide. Nothing else in the text changes.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::process::{BIN, DEADLINE, Guard, INHERITED, PASSWORD, free_port};

/// The first ```sh block of the README section `heading`.
fn shell_block<'a>(readme: &'a str, heading: &str) -> &'a str {
    let section = &readme[readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has a {heading} section"))..];
    let start = section.find("```sh\n").expect("a ```sh block") + "```sh\n".len();
    let len = section[start..].find("```").expect("the block ends");
    &section[start..start + len]
}

#[test]
fn the_readme_first_run_works_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let block = shell_block(&readme, "\n## First run\n");

    let install: Vec<&str> = block.lines().filter(|l| l.starts_with("cargo ")).collect();
    assert_eq!(
        install,
        ["cargo install --locked --path ."],
        "step 1 installs"
    );
    assert!(
        block.contains("pillbox serve") && block.matches("pillbox serve").count() == 1,
        "the server is started once"
    );
    for prompt in [
        "New password (at least 12 characters)",
        "Repeat the password",
    ] {
        assert!(
            readme.contains(prompt),
            "the README mentions the prompt {prompt:?}"
        );
        assert!(
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/cli/password.rs"))
                .unwrap()
                .contains(prompt),
            "and it is the binary's prompt"
        );
    }
    let port = free_port();
    let script: String = block
        .lines()
        .filter(|l| !l.starts_with("cargo "))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    assert!(!script.contains("8080"), "every use of the port was found");

    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("pillbox")).unwrap();
    let work = dir.path().join("clone");
    std::fs::create_dir(&work).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", &script])
        .current_dir(&work)
        .env("PATH", path)
        // Its own process group, so a server left behind by a failing step
        // is stopped with the rest.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in INHERITED {
        cmd.env_remove(var);
    }
    // The server's default port, moved with the URLs.
    cmd.env("PILLBOX_LISTEN", format!("127.0.0.1:{port}"));
    let mut shell = Guard(cmd.spawn().expect("run bash"));
    let group = shell.0.id();
    {
        use std::io::Write;
        // One password line for each of steps 2 and 3, as a terminal user
        // would type them (the binary reads exactly one line each).
        let mut stdin = shell.0.stdin.take().unwrap();
        write!(stdin, "{PASSWORD}\nanother long password\n").unwrap();
    }
    let status = shell.wait_for_exit(DEADLINE * 2);
    // Step 7's graceful stop finishes after bash has exited.
    let log_path = work.join("pillbox.log");
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < end
        && !std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("shutting down"))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .status();
    let status = status.expect("the first run finishes within the deadline");
    let (stdout, stderr) = shell.read_all();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        status.success(),
        "{status}\nstdout: {stdout}\nstderr: {stderr}\nserver log: {log}"
    );
    assert!(
        log.contains("shutting down"),
        "step 7 stops the server: {log}"
    );

    // Steps 2 and 3 printed the household and membership ids; step 6 the
    // people (the owner's and partner's own persons) and then the new child.
    let (ids, bodies) = stdout.split_at(stdout.find('{').unwrap_or(stdout.len()));
    assert_eq!(ids.lines().collect::<Vec<_>>(), ["1", "2"], "{stdout}");
    let bodies: Vec<serde_json::Value> = serde_json::Deserializer::from_str(bodies)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(bodies.len(), 2, "{stdout}");
    let names: Vec<&str> = bodies[0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Your Name", "Partner Name"], "{stdout}");
    assert_eq!(bodies[1]["data"]["name"], "Ada");
    assert!(work.join("pillbox-data/pillbox.sqlite3").is_file());
}

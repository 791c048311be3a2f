//! A newcomer's first run through the real binary: `serve` alone in an
//! empty directory ends its start-up with the set-up link, a busy port is
//! one line that says what to do, and the set-up page leaves the owner
//! signed in with the address phones will use kept for links.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::support::process::{
    DEADLINE, Guard, PASSWORD, free_port, http_get, http_request, pillbox, serve, serve_with,
};

/// Waits until `path` holds `needle`, and answers what it holds then.
fn wait_for(path: &std::path::Path, needle: &str) -> String {
    let end = Instant::now() + DEADLINE;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < end, "{needle} in: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The set-up link of the line that holds one.
fn link_of(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains("/setup?token="))
        .expect("a set-up link");
    let start = line.find("http").expect("a link");
    let text = line;
    text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect()
}

#[test]
fn serve_alone_in_an_empty_directory_ends_its_start_up_with_the_set_up_link() {
    // What `cargo run --release -- serve` runs on a fresh clone: no other
    // argument, the data in ./pillbox-data, 127.0.0.1:8080.
    assert!(
        TcpListener::bind((Ipv4Addr::LOCALHOST, 8080)).is_ok(),
        "this test needs port 8080 free, as a fresh machine has it"
    );
    let dir = tempfile::tempdir().unwrap();
    let terminal = dir.path().join("terminal.txt");
    let mut cmd = pillbox(&["serve"]);
    cmd.current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&terminal).unwrap());
    let _server = Guard(cmd.spawn().unwrap());
    let text = wait_for(&terminal, "/setup?token=");
    // A moment for anything start-up still had to say.
    std::thread::sleep(Duration::from_millis(300));
    let text = std::fs::read_to_string(&terminal).unwrap_or(text);
    let last = text.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    assert!(last.contains("in a browser to set Pillbox up"), "{text}");
    let link = link_of(last);
    assert!(
        link.starts_with("http://127.0.0.1:8080/setup?token="),
        "{link}"
    );
    assert!(
        text.contains("--listen 0.0.0.0:8080"),
        "how to reach it from phones: {text}"
    );
    assert!(dir.path().join("pillbox-data").is_dir());
    let page = http_get(8080, link.trim_start_matches("http://127.0.0.1:8080"), None).unwrap();
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"household\""));
}

#[test]
fn a_busy_port_is_one_line_naming_it_and_the_listen_flag() {
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let data = dir.path().join("data");
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
    let status = server
        .wait_for_exit(DEADLINE)
        .expect("serve gives up on a busy port");
    assert!(!status.success());
    let mut stderr = String::new();
    server
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("pillbox: error: ")
            && last.contains(&format!("port {port} on 127.0.0.1 is already in use"))
            && last.contains(&format!("--listen 127.0.0.1:{}", port + 1)),
        "{stderr}"
    );
    drop(taken);
}

fn form(fields: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(fields).unwrap()
}

fn post(port: u16, path: &str, fields: &[(&str, &str)]) -> crate::support::process::HttpResponse {
    let form_type = [("Content-Type", "application/x-www-form-urlencoded")];
    http_request(port, "POST", path, None, &form_type, Some(&form(fields))).unwrap()
}

fn issuer(port: u16) -> String {
    let metadata = http_get(port, "/.well-known/oauth-authorization-server", None).unwrap();
    metadata.json()["issuer"].as_str().unwrap().to_string()
}

#[test]
fn the_set_up_page_signs_the_owner_in_and_keeps_the_address_for_phones() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let port = free_port();
    let server = serve(&data, port, &log);
    let link = link_of(&wait_for(&log, "/setup?token="));
    let path = link.trim_start_matches(&format!("http://127.0.0.1:{port}"));
    let token = path.trim_start_matches("/setup?token=").to_string();
    let page = http_get(port, path, None).unwrap();
    assert_eq!(page.status, 200);
    // The address the page was opened at, for the owner to keep or change;
    // the page's script puts in the browser's own address and time zone.
    assert!(
        page.body
            .contains(&format!("value=\"http://127.0.0.1:{port}\"")),
        "{}",
        page.body
    );
    assert!(page.body.contains("data-detect"));
    assert!(page.body.contains("/js/setup.js"));

    let verifier = "a-verifier-of-the-web-app-that-is-long-enough-for-pkce";
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let redirect = format!("http://127.0.0.1:{port}/app/oauth/callback");
    let mut fields = vec![
        ("token", token.as_str()),
        ("household", "Our home"),
        ("name", "Olive Owner"),
        ("email", "owner@example.org"),
        ("password", PASSWORD),
        ("password_again", PASSWORD),
        ("time_zone", "Pacific/Auckland"),
        ("public_url", "raspberrypi.local:8080"),
        ("response_type", "code"),
        ("client_id", "pillbox-web"),
        ("redirect_uri", redirect.as_str()),
        ("state", "the-tab-state"),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("scope", "pillbox"),
        ("device_label", "Web app (Firefox on Linux)"),
    ];
    // An address phones could not open: the form again, nothing made.
    let wrong = post(port, "/setup", &fields);
    assert_eq!(wrong.status, 422);
    assert!(
        wrong.body.contains("must start with http://"),
        "{}",
        wrong.body
    );
    assert!(
        !wrong.body.contains("data-detect"),
        "the owner's entries stay"
    );
    assert!(wrong.body.contains("Pacific/Auckland"));
    assert_eq!(
        http_get(port, "/api/v1/capabilities", None).unwrap().status,
        200
    );
    assert_eq!(issuer(port), format!("http://127.0.0.1:{port}"));

    fields[7].1 = "HTTP://RaspberryPi.local:8080/";
    let created = post(port, "/setup", &fields);
    assert_eq!(created.status, 303, "{}", created.body);
    // Back to the web app in this browser, with a code for its sign-in.
    let location = created.header("location").unwrap().to_string();
    assert!(
        location.starts_with(&format!("{redirect}?code=pbx_ac_")),
        "{location}"
    );
    assert!(location.contains("state=the-tab-state"), "{location}");
    let query = location.split_once('?').unwrap().1;
    let answer: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    let code = &answer.iter().find(|(k, _)| k == "code").unwrap().1;
    let tokens = post(
        port,
        "/api/v1/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", "pillbox-web"),
            ("code", code),
            ("redirect_uri", &redirect),
            ("code_verifier", verifier),
        ],
    );
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let access = tokens.json()["access_token"].as_str().unwrap().to_string();
    let households = http_get(port, "/api/v1/auth/households", Some(&access)).unwrap();
    assert_eq!(households.json()["data"][0]["role"], "owner");
    assert_eq!(
        households.json()["data"][0]["time_zone"],
        "Pacific/Auckland"
    );
    let sessions = http_get(port, "/api/v1/auth/sessions", Some(&access)).unwrap();
    assert!(
        sessions.body.contains("Web app (Firefox on Linux)"),
        "{}",
        sessions.body
    );

    // Links are built from the address given, at once and after a restart.
    assert_eq!(issuer(port), "http://raspberrypi.local:8080");
    drop(server);
    let port = free_port();
    let _again = serve(&data, port, &dir.path().join("again.log"));
    assert_eq!(issuer(port), "http://raspberrypi.local:8080");
}

#[test]
fn with_public_url_configured_the_set_up_page_shows_it_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let port = free_port();
    let _server = serve_with(&data, port, &log, |cmd| {
        cmd.args(["--public-url", "https://pillbox.home.example/"]);
    });
    let link = link_of(&wait_for(&log, "/setup?token="));
    assert!(
        link.starts_with("https://pillbox.home.example/setup?token="),
        "{link}"
    );
    let path = &link["https://pillbox.home.example".len()..];
    let page = http_get(port, path, None).unwrap();
    assert!(
        page.body
            .contains("open Pillbox at <strong>https://pillbox.home.example</strong>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("name=\"public_url\""));
    let bad = pillbox(&["serve", "--public-url", "pillbox.home.example"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("must start with http://"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

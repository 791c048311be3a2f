//! The web app as the server delivers it: the shell on every view path,
//! versioned assets cached for a year, the service worker and the shell
//! never cached, and the one-time set-up link of a server with no household
//! (through the real binary, reading the link from its log).

use axum::http::Method;

use crate::support::TestApp;
use crate::support::process::{
    PASSWORD, free_port, http_get, http_request, serve, set_up_household, token_create,
};

#[tokio::test]
async fn every_view_path_serves_the_shell_and_assets_are_versioned() {
    let app = TestApp::new().await;
    let mut prefix = String::new();
    for path in [
        "/",
        "/app",
        "/app/",
        "/app/today",
        "/app/people/3",
        pillbox::config::DEFAULT_WEB_REDIRECT_PATH,
    ] {
        let page = app.raw(Method::GET, path, None, None, &[]).await;
        page.assert_status(200);
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        assert_eq!(page.header("cache-control"), Some("no-cache"), "{path}");
        let csp = page.header("content-security-policy").unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe"),
            "{csp}"
        );
        let html = page.body["raw"].as_str().unwrap();
        let end = html.find("/js/main.js").expect("the app module");
        let start = html[..end].rfind("/v/").expect("a versioned asset");
        prefix = html[start..end].to_string();
    }
    assert!(
        pillbox::config::DEFAULT_WEB_REDIRECT_PATH
            .starts_with(&format!("{}/", pillbox::web::APP_PATH)),
        "the web client's redirect is a view of the app"
    );

    for (file, kind) in [
        ("/js/main.js", "text/javascript"),
        ("/vendor/preact-htm.js", "text/javascript"),
        ("/index.css", "text/css"),
    ] {
        let current = app
            .raw(Method::GET, &format!("{prefix}{file}"), None, None, &[])
            .await;
        current.assert_status(200);
        assert!(
            current.header("content-type").unwrap().starts_with(kind),
            "{file}"
        );
        assert_eq!(
            current.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{file}"
        );
        // An older build's prefix still answers, but is never pinned.
        let old = app
            .raw(
                Method::GET,
                &format!("/v/000000000000{file}"),
                None,
                None,
                &[],
            )
            .await;
        old.assert_status(200);
        assert_eq!(old.header("cache-control"), Some("no-cache"), "{file}");
    }

    let worker = app.raw(Method::GET, "/sw.js", None, None, &[]).await;
    worker.assert_status(200);
    assert!(
        worker
            .header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert_eq!(worker.header("cache-control"), Some("no-cache"));
    assert!(worker.body["raw"].as_str().unwrap().contains(&prefix));

    let manifest = app
        .raw(Method::GET, "/manifest.webmanifest", None, None, &[])
        .await;
    manifest.assert_status(200);
    assert_eq!(
        manifest.header("content-type"),
        Some("application/manifest+json")
    );
    let icon = app.raw(Method::GET, "/icon-192.png", None, None, &[]).await;
    icon.assert_status(200);
    assert_eq!(icon.header("content-type"), Some("image/png"));

    for path in [
        format!("{prefix}/index.html"),
        format!("{prefix}/sw.js"),
        format!("{prefix}/nothing.js"),
    ] {
        app.raw(Method::GET, &path, None, None, &[])
            .await
            .assert_error(404, "not_found");
    }
}

/// The link from the one log line that shows it. The log thread writes
/// that line beside the server's first answers, a moment later on a busy
/// machine, so the log is read again until it is there.
fn link_in(log_path: &std::path::Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        if let Some(start) = log.find("/setup?token=") {
            return log[start..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a set-up link in the log: {log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(fields).unwrap()
}

#[test]
fn the_set_up_link_creates_the_household_once_and_only_with_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log_path = dir.path().join("serve.log");
    let port = free_port();
    let server = serve(&data, port, &log_path);
    let link = link_in(&log_path);
    let token = link.trim_start_matches("/setup?token=").to_string();
    assert!(token.len() >= 43, "{token}");

    // No token, a wrong one: a dead-link page, nothing else.
    for path in ["/setup", "/setup?token=guess"] {
        assert_eq!(http_get(port, path, None).unwrap().status, 404, "{path}");
    }
    let page = http_get(port, &link, None).unwrap();
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"household\""));

    let form_type = [("Content-Type", "application/x-www-form-urlencoded")];
    let post = |fields: &[(&str, &str)]| {
        http_request(
            port,
            "POST",
            "/setup",
            None,
            &form_type,
            Some(&form(fields)),
        )
        .unwrap()
    };
    let mut fields = vec![
        ("token", token.as_str()),
        ("household", "Our home"),
        ("name", "Olive Owner"),
        ("email", "owner@example.org"),
        ("password", PASSWORD),
        ("password_again", "something else entirely"),
        ("time_zone", "Europe/London"),
    ];
    // A mistake shows the form again and keeps the link alive.
    let wrong = post(&fields);
    assert_eq!(wrong.status, 422);
    assert!(wrong.body.contains("The two passwords differ."));
    assert!(!wrong.body.contains(PASSWORD));
    fields[5].1 = PASSWORD;
    let mut stolen = fields.clone();
    stolen[0].1 = "not-the-token";
    assert_eq!(post(&stolen).status, 404);

    let created = post(&fields);
    assert_eq!(created.status, 303, "{}", created.body);
    assert_eq!(created.header("location"), Some("/app"));
    // The link is spent.
    assert_eq!(post(&fields).status, 404);
    assert_eq!(http_get(port, &link, None).unwrap().status, 404);

    // The owner and their person exist, as `pillbox setup` makes them.
    let issued = token_create(&data, "1", "owner@example.org", &[]);
    issued.assert_success();
    let owner = issued.single_stdout_line().to_string();
    let people = http_get(port, "/api/v1/households/1/people", Some(&owner)).unwrap();
    assert_eq!(people.status, 200);
    assert_eq!(people.json()["data"][0]["name"], "Olive Owner");
    let households = http_get(port, "/api/v1/auth/households", Some(&owner)).unwrap();
    assert_eq!(households.json()["data"][0]["role"], "owner");
    assert_eq!(households.json()["data"][0]["time_zone"], "Europe/London");
    drop(server);

    // The token is in the one start-up line and nowhere else in the log.
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(log.matches(&token).count(), 1, "{log}");
}

#[test]
fn a_server_with_a_household_offers_no_set_up_link() {
    let (dir, data, _) = set_up_household();
    let log_path = dir.path().join("serve.log");
    let port = free_port();
    let server = serve(&data, port, &log_path);
    assert_eq!(http_get(port, "/setup", None).unwrap().status, 404);
    drop(server);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains("/setup?token="), "{log}");
}

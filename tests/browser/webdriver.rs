//! A small W3C WebDriver client for Debian's chromedriver and headless
//! Chromium: the few commands the end-to-end tests need, over the same
//! blocking HTTP/1.1 client the process tests use (no extra crates).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::process::{Guard, dechunk, free_port};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const WAIT: Duration = Duration::from_secs(30);

/// Why the browser tests cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    if std::env::var_os("PILLBOX_SKIP_BROWSER_TESTS").is_some() {
        return Some("PILLBOX_SKIP_BROWSER_TESTS is set".into());
    }
    for tool in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(tool).exists() {
            return Some(format!(
                "{tool} is missing (apt-get install chromium chromium-driver)"
            ));
        }
    }
    None
}

pub struct Browser {
    port: u16,
    session: String,
    _driver: Guard,
    _profile: tempfile::TempDir,
}

pub struct Element(String);

impl Browser {
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Guard(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let end = Instant::now() + WAIT;
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
                && raw(port, "GET", "/status", None)["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < end, "chromedriver did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let created = raw(
            port,
            "POST",
            "/session",
            Some(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
            }}})),
        );
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_string();
        Browser {
            port,
            session,
            _driver: driver,
            _profile: profile,
        }
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let answer = raw(self.port, method, &path, body);
        if let Some(error) = answer["value"].get("error") {
            panic!(
                "WebDriver {method} {path}: {error} {}",
                answer["value"]["message"]
            );
        }
        answer
    }

    fn try_cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let path = format!("/session/{}{path}", self.session);
        let answer = raw(self.port, method, &path, body);
        match answer["value"].get("error") {
            Some(error) => Err(format!("{error}: {}", answer["value"]["message"])),
            None => Ok(answer),
        }
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.cmd("GET", "/url", None)["value"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn size(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    pub fn run(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )["value"]
            .clone()
    }

    pub fn run_async(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": []})),
        )["value"]
            .clone()
    }

    fn find_now(&self, css: &str) -> Option<Element> {
        let found = self
            .try_cmd(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .ok()?;
        let value = &found["value"];
        value
            .as_object()?
            .values()
            .next()
            .and_then(Value::as_str)
            .map(|id| Element(id.to_string()))
    }

    /// Waits for an element matching `css`.
    pub fn find(&self, css: &str) -> Element {
        let end = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.find_now(css) {
                return e;
            }
            if Instant::now() > end {
                panic!("no {css} on {}; page text: {}", self.url(), self.text());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn click(&self, css: &str) {
        let element = self.find(css);
        self.click_element(&element);
    }

    pub fn click_element(&self, element: &Element) {
        self.cmd(
            "POST",
            &format!("/element/{}/click", element.0),
            Some(json!({})),
        );
    }

    /// Clicks the first button whose visible text starts with `label`.
    pub fn click_button(&self, label: &str) {
        self.wait_for(&format!("a {label} button"), || {
            self.run(
                "const b = [...document.querySelectorAll('button')].find(b => b.textContent.replace(/\\s+/g, ' ').trim().startsWith(arguments[0]) && !b.disabled); if (b) { b.click(); return true; } return false;",
                json!([label]),
            ) == true
        });
    }

    pub fn fill(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.cmd(
            "POST",
            &format!("/element/{}/clear", element.0),
            Some(json!({})),
        );
        self.cmd(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(json!({ "text": text })),
        );
    }

    pub fn select(&self, css: &str, value: &str) {
        self.find(css);
        self.run(
            "const s = document.querySelector(arguments[0]); s.value = arguments[1]; s.dispatchEvent(new Event('change', {bubbles: true}));",
            json!([css, value]),
        );
    }

    pub fn text(&self) -> String {
        self.run(
            "return document.body ? document.body.innerText : ''",
            json!([]),
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    pub fn wait_for(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let end = Instant::now() + WAIT;
        while !ready() {
            if Instant::now() > end {
                panic!(
                    "timed out waiting for {what} on {}; page text: {}",
                    self.url(),
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    pub fn wait_for_text(&self, needle: &str) {
        self.wait_for(&format!("text {needle:?}"), || self.text().contains(needle));
    }

    pub fn screenshot(&self, path: &Path) {
        let data = self.cmd("GET", "/screenshot", None)["value"]
            .as_str()
            .unwrap()
            .to_string();
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// axe-core's serious and critical violations on the page as it is now.
    pub fn accessibility_problems(&self) -> Vec<String> {
        self.run(AXE, json!([]));
        let found = self.run_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations
               .filter(v => v.impact === 'serious' || v.impact === 'critical')
               .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))),
               e => done(['axe failed: ' + e]));",
        );
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    pub fn assert_accessible(&self, page: &str) {
        let problems = self.accessibility_problems();
        assert!(problems.is_empty(), "{page}: {problems:#?}");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() {
            raw(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
    }
}

const AXE: &str = include_str!("vendor/axe.min.js");

/// One request to chromedriver over a fresh connection; a browser under
/// load can take a while to start, so the wait is longer than the API's.
fn raw(port: u16, method: &str, path: &str, body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string()).unwrap_or_else(|| {
        if method == "POST" {
            "{}".into()
        } else {
            String::new()
        }
    });
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    // chromedriver may keep the connection open: read the head, then
    // exactly Content-Length bytes (or chunks up to the last one).
    let mut answer = Vec::new();
    let mut buf = [0u8; 65536];
    let content = loop {
        let n = stream
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}"));
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer).to_string();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let lower = head.to_ascii_lowercase();
            let length = lower
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            match length {
                Some(length) if rest.len() >= length => break rest[..length].to_string(),
                None if lower.contains("transfer-encoding: chunked")
                    && rest.ends_with("0\r\n\r\n") =>
                {
                    break dechunk(rest).expect("a chunked body");
                }
                None if n == 0 => break rest.to_string(),
                _ => {}
            }
        }
        assert!(
            n > 0,
            "chromedriver {method} {path}: connection closed early"
        );
    };
    serde_json::from_str(&content)
        .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}: {content}"))
}

/// Where the tests write the README's screenshots.
pub fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots")
}

//! End-to-end tests of the web app: the real `pillbox` binary as a process,
//! driven through headless Chromium over WebDriver (Debian's chromium and
//! chromium-driver). Without them each test says so on stderr and passes.
//! Every page visited is checked with axe-core (no serious or critical
//! violations), and the README's screenshots are taken here.

#[allow(dead_code)]
#[path = "../api/support/process.rs"]
mod process;
mod webdriver;

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use process::{
    Guard, PASSWORD, free_port, http_request, password_line, pillbox, run, serve, set_up_household,
    token_create,
};
use webdriver::{Browser, screenshots, unavailable};

const OWNER: &str = "owner@example.org";

/// One browser at a time: each is a heavy process tree, and tests that
/// wait on pages should not also wait on each other's browsers.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_BROWSER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes straight to stderr (not the captured test output), so a skipped
/// run says so in `cargo test`'s output.
fn skipped(test: &str) -> bool {
    match unavailable() {
        Some(why) => {
            let _ = writeln!(std::io::stderr(), "browser test {test} SKIPPED: {why}");
            true
        }
        None => false,
    }
}

struct Server {
    port: u16,
    guard: Option<Guard>,
    data: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl Server {
    fn start(data: &Path, log: &Path) -> Server {
        let port = free_port();
        let guard = serve(data, port, log);
        Server {
            port,
            guard: Some(guard),
            data: data.to_path_buf(),
            log: log.to_path_buf(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn stop(&mut self) {
        self.guard.take();
    }

    fn restart(&mut self) {
        let log = self.log.with_extension("2");
        self.guard = Some(serve(&self.data, self.port, &log));
    }
}

/// An API client with an app token made by `pillbox token create`.
struct Api {
    port: u16,
    token: String,
    household: String,
}

impl Api {
    fn new(server: &Server, household: &str) -> Api {
        let out = token_create(&server.data, household, OWNER, &[]);
        out.assert_success();
        Api {
            port: server.port,
            token: out.single_stdout_line().to_string(),
            household: household.to_string(),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/api/v1/households/{}{path}", self.household);
        let body = body.map(|b| b.to_string());
        let r = http_request(
            self.port,
            method,
            &path,
            Some(&self.token),
            &[],
            body.as_deref(),
        )
        .unwrap();
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
        r.json()
    }

    fn today(&self) -> String {
        let day = self.call("GET", "/dose_occurrences", None);
        day["meta"]["date"].as_str().unwrap().to_string()
    }

    /// Ada with one medicine (30 in stock) taken daily at 08:00 and 20:00.
    fn ada_with_tablets(&self) -> (Value, Value) {
        let ada = self.call(
            "POST",
            "/people",
            Some(json!({"person": {"name": "Ada", "date_of_birth": "2015-03-01"}})),
        )["data"]
            .clone();
        let med = self.call(
            "POST",
            "/medications",
            Some(json!({"medication": {"name": "Vitamin D", "dose_amount": "1", "dose_unit": "tablet", "current_supply": "30", "reorder_threshold": "5"}})),
        )["data"]
            .clone();
        self.call(
            "POST",
            "/schedules",
            Some(json!({"schedule": {"person_id": ada["id"], "medication_id": med["id"],
                "dose_amount": "1", "dose_unit": "tablet", "start_date": self.today(),
                "schedule_type": "multiple_daily", "schedule_config": {"times": ["08:00", "20:00"]}}})),
        );
        (ada, med)
    }

    fn supply(&self, med: &Value) -> String {
        self.call("GET", &format!("/medications/{}", med["id"]), None)["data"]["current_supply"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn takes(&self) -> Vec<Value> {
        self.call("GET", "/medication_takes?per_page=100", None)["data"]
            .as_array()
            .unwrap()
            .clone()
    }
}

fn sign_in(browser: &Browser, server: &Server) {
    sign_in_as(browser, server, OWNER);
}

fn sign_in_as(browser: &Browser, server: &Server, email: &str) {
    browser.goto(&server.url("/app/today"));
    browser.click("#sign-in");
    browser.find("input#email");
    browser.assert_accessible("sign-in page");
    browser.fill("input#email", email);
    browser.fill("input#password", PASSWORD);
    browser.click("button[type=submit]");
    browser.wait_for_text("Sign out");
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn first_run_set_up_then_sign_in_take_a_dose_and_mark_one_not_taken() {
    if skipped("first_run_set_up_then_sign_in_take_a_dose_and_mark_one_not_taken") {
        return;
    }
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let server = Server::start(&data, &log);
    // The one line that shows the set-up link.
    let text = std::fs::read_to_string(&log).unwrap();
    let start = text
        .find("/setup?token=")
        .expect("a set-up link in the log");
    let link: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    assert_eq!(text.matches("/setup?token=").count(), 1, "{text}");

    let browser = Browser::start();
    // Without the token (or with a wrong one) nobody claims the server.
    browser.goto(&server.url("/setup?token=wrong"));
    browser.wait_for_text("not valid");

    browser.goto(&server.url(&link));
    browser.find("input#household");
    browser.assert_accessible("set-up page");
    browser.fill("input#household", "Our home");
    browser.fill("input#name", "Olive Owner");
    browser.fill("input#email", OWNER);
    browser.fill("input#password", PASSWORD);
    browser.fill("input#password_again", PASSWORD);
    browser.fill("input#time_zone", "Europe/London");
    browser.click("form button[type=submit]");
    // The new owner lands in the app signed in.
    browser.wait_for_text("Sign out");
    // The link is spent.
    browser.goto(&server.url(&link));
    browser.wait_for_text("not valid");

    let api = Api::new(&server, "1");
    let (_ada, med) = api.ada_with_tablets();
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("Vitamin D");
    browser.assert_accessible("Today");
    browser.size(390, 844);
    browser.screenshot(&screenshots().join("today-phone.png"));
    browser.size(1280, 900);
    browser.screenshot(&screenshots().join("today-desktop.png"));

    // One tap records the first dose; stock falls by one.
    browser.click_button("Take");
    browser.wait_for_text("Recorded: Vitamin D");
    browser.wait_for_text("Taken");
    assert_eq!(api.supply(&med), "29");
    assert_eq!(api.takes().len(), 1);

    // The other dose: not taken, with a reason; no stock change.
    browser.click_button("Not taken");
    browser.find("#not-taken-reason");
    browser.assert_accessible("not-taken dialog");
    browser.select("#not-taken-reason", "Asleep");
    browser.click_button("Save as not taken");
    browser.wait_for_text("Marked not taken");
    browser.wait_for_text("Undo not taken");
    let day = api.call("GET", "/dose_occurrences", None);
    let outcomes: Vec<&str> = day["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["taken", "not_taken"]);
    assert_eq!(api.supply(&med), "29");

    // Undo within the rules: the not-taken dose is open again.
    browser.click_button("Undo not taken");
    browser.wait_for_text("Reopened");
    let day = api.call("GET", "/dose_occurrences", None);
    assert_eq!(day["data"][1]["outcome"], "open");

    browser.goto(&server.url("/app/medicines"));
    browser.wait_for_text("29 tablet in stock");
    browser.assert_accessible("Medicines");
    browser.size(390, 844);
    browser.screenshot(&screenshots().join("medicines-phone.png"));
    browser.size(1280, 900);
    browser.screenshot(&screenshots().join("medicines-desktop.png"));

    // Stock removed with a reason, through the page.
    browser.click_button("Remove stock");
    browser.fill("#rem-quantity", "4");
    browser.select("#rem-reason", "damaged");
    browser.assert_accessible("remove-stock dialog");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Stock removed");
    assert_eq!(api.supply(&med), "25");

    // Ordered, then received: the order's quantity is added.
    browser.click_button("Mark ordered");
    browser.fill("#ord-quantity", "10");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Marked as ordered");
    browser.click_button("Mark received");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Marked as received");
    assert_eq!(api.supply(&med), "35");
    browser.click_button("Count stock");
    browser.fill("#adj-quantity", "33");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Stock updated");
    browser.wait_for_text("33 tablet in stock");
    assert_eq!(api.supply(&med), "33");

    // A dosage option added, then edited.
    browser.click_button("Add dosage option");
    browser.fill("#opt-amount", "2");
    browser.fill("#opt-frequency", "at night");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Dosage option added");
    browser.click_button("Edit dosage option");
    browser.fill("#opt-amount", "3");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Dosage option saved");
    browser.wait_for_text("3 tablet at night");

    // Signing out revokes the session and leaves the device signed out.
    browser.click_button("Sign out");
    browser.find("#sign-in");
    let kept = browser.run(
        "return Object.keys(localStorage).filter(k => k !== 'pillbox.large_text')",
        json!([]),
    );
    assert_eq!(kept, json!([]));
}

#[test]
fn a_schedule_is_added_paused_and_resumed_a_member_invited_and_totp_enrolled() {
    if skipped("a_schedule_is_added_paused_and_resumed_a_member_invited_and_totp_enrolled") {
        return;
    }
    let _one = one_at_a_time();
    let (dir, data, household) = set_up_household();
    let server = Server::start(&data, &dir.path().join("serve.log"));
    let api = Api::new(&server, &household);
    api.call(
        "POST",
        "/medications",
        Some(json!({"medication": {"name": "Ibuprofen", "dose_unit": "tablet", "current_supply": "10"}})),
    );
    let browser = Browser::start();
    sign_in(&browser, &server);

    browser.goto(&server.url("/app/people"));
    browser.wait_for_text("Olive Owner");
    browser.assert_accessible("People");
    browser.click_button("Add a schedule");
    browser.find("#sch-times");
    browser.select("#sch-type", "weekly");
    browser.find("#day-monday");
    browser.click("#day-monday");
    browser.fill("#sch-times", "09:00");
    browser.assert_accessible("schedule dialog");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Schedule saved");
    let schedules = api.call("GET", "/schedules", None);
    let schedule = &schedules["data"][0];
    assert_eq!(schedule["schedule_type"], "weekly");
    assert_eq!(schedule["schedule_config"]["weekdays"], json!(["monday"]));
    assert_eq!(schedule["schedule_config"]["times"], json!(["09:00"]));

    browser.click_button("Pause");
    browser.select("#pause-reason", "side_effects");
    browser.fill("#pause-note", "rash");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Paused since");
    assert!(api.call("GET", "/schedules", None)["data"][0]["current_pause_period"].is_object());
    browser.click_button("Resume");
    browser.wait_for_text("Resumed.");
    browser.wait_for_text("Pause history");
    browser.wait_for_text("side effects");
    assert!(api.call("GET", "/schedules", None)["data"][0]["current_pause_period"].is_null());

    // An as-needed direct assignment: Today offers it, and after a take
    // shows the next time the API allows.
    browser.click_button("Add a direct assignment");
    browser.select("#pm-kind", "as_needed");
    browser.fill("#pm-gap", "4");
    browser.assert_accessible("direct assignment dialog");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Direct assignment added");
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("As needed");
    browser.click_button("Take now");
    browser.wait_for_text("Next dose allowed from");
    assert_eq!(api.takes().len(), 1);

    browser.goto(&server.url("/app/admin"));
    browser.wait_for_text("Invitations");
    browser.assert_accessible("Household administration");
    browser.click_button("Invite a member");
    browser.fill("#inv-email", "partner@example.org");
    browser.fill("#inv-name", "Pat Partner");
    browser.run(
        "const d = document.querySelector('#inv-dob'); d.value = '1985-06-01';",
        json!([]),
    );
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Invitation link");
    let link = browser.find("#once-value");
    let _ = link;
    assert!(browser.text().contains("/invitation?token="));
    browser.click_button("Done");
    browser.wait_for_text("partner@example.org");
    let invitations = api.call("GET", "/admin/invitations", None);
    assert_eq!(invitations["data"][0]["email"], "partner@example.org");

    // An app token is shown once, then only its name and prefix.
    browser.click_button("Create an app token");
    browser.fill("#tok-name", "Kitchen tablet");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Your new app token");
    let secret = browser.run(
        "return document.querySelector('#once-value').textContent",
        json!([]),
    );
    let secret = secret.as_str().unwrap().to_string();
    assert!(secret.starts_with("pbx_app_"), "{secret}");
    browser.click_button("Done");
    browser.wait_for_text("Kitchen tablet");
    assert!(!browser.text().contains(&secret));
    browser.wait_for_text("app_token.created");

    browser.goto(&server.url("/app/me"));
    browser.wait_for_text("Larger text");
    browser.assert_accessible("You");
    browser.click("#large-text");
    assert_eq!(
        browser.run("return document.documentElement.className", json!([])),
        "large"
    );
    // This browser is among the signed-in devices.
    browser.wait_for_text("This device");

    // An authenticator app: the password starts it, the key is shown, a
    // first code confirms it, and the recovery codes are shown once.
    browser.fill("#totp-on-password", PASSWORD);
    browser.click_button("Set up an authenticator app");
    browser.find("#totp-code");
    let secret = browser.run(
        "return [...document.querySelectorAll('.token')].map(e => e.textContent).pop()",
        json!([]),
    );
    let secret = base32_decode(secret.as_str().unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    browser.fill(
        "#totp-code",
        &pillbox::identity::mfa::totp::code_at(&secret, now),
    );
    browser.click_button("Confirm");
    browser.wait_for_text("Recovery codes");
    browser.assert_accessible("recovery codes");
    let shown = "return [...document.querySelectorAll('li.token')].map(e => e.textContent)";
    let first = browser.run(shown, json!([]));
    browser.click_button("Done");
    browser.wait_for_text("An authenticator app is set up (10 recovery codes left)");

    // New recovery codes and turning the factor off each take the password
    // and a code (here a recovery code).
    browser.fill("#totp-new-password", PASSWORD);
    browser.fill("#totp-new-code", first[0].as_str().unwrap());
    browser.click_button("New recovery codes");
    browser.wait_for_text("Recovery codes");
    let second = browser.run(shown, json!([]));
    assert_ne!(first, second);
    browser.click_button("Done");
    browser.wait_for_text("An authenticator app is set up (10 recovery codes left)");
    browser.fill("#totp-off-password", PASSWORD);
    browser.fill("#totp-off-code", second[0].as_str().unwrap());
    browser.click_button("Turn off");
    browser.wait_for_text("Not set up.");
}

/// RFC 4648 base32 without padding, as the enrolment shows the key.
fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut bits, mut value, mut out) = (0u32, 0u32, Vec::new());
    for c in text.trim().trim_end_matches('=').bytes() {
        let index = ALPHABET
            .iter()
            .position(|&a| a == c)
            .expect("a base32 letter") as u32;
        value = (value << 5) | index;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((value >> bits) as u8);
            value &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn a_take_made_while_the_server_is_unreachable_arrives_exactly_once() {
    if skipped("a_take_made_while_the_server_is_unreachable_arrives_exactly_once") {
        return;
    }
    let _one = one_at_a_time();
    let (dir, data, household) = set_up_household();
    let mut server = Server::start(&data, &dir.path().join("serve.log"));
    let api = Api::new(&server, &household);
    let (_ada, med) = api.ada_with_tablets();
    let browser = Browser::start();
    sign_in(&browser, &server);
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("Vitamin D");

    server.stop();
    browser.click_button("Take");
    browser.wait_for_text("Waiting to send: 1");
    browser.wait_for_text("Offline");
    // The day stays readable from what was loaded.
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("Waiting to send: 1");
    browser.wait_for_text("Vitamin D");
    browser.assert_accessible("Today offline");

    server.restart();
    browser.wait_for("the queued take to be sent", || {
        !browser.text().contains("Waiting to send")
    });
    wait_until("the take to be recorded", || api.takes().len() == 1);
    // A second flush (the page's timer, a reload) sends nothing again.
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("Taken");
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(api.takes().len(), 1);
    assert_eq!(api.supply(&med), "29");
}

#[test]
fn a_carer_sees_only_the_people_granted_to_them() {
    if skipped("a_carer_sees_only_the_people_granted_to_them") {
        return;
    }
    let _one = one_at_a_time();
    let (dir, data, household) = set_up_household();
    let server = Server::start(&data, &dir.path().join("serve.log"));
    let api = Api::new(&server, &household);
    let (ada, med) = api.ada_with_tablets();
    let added = run(
        pillbox(&[
            "member",
            "add",
            "--data-dir",
            data.to_str().unwrap(),
            "--household",
            &household,
            "--email",
            "cara@example.org",
            "--role",
            "member",
            "--name",
            "Cara Carer",
        ]),
        Some(&password_line()),
    );
    added.assert_success();
    let membership: i64 = added.single_stdout_line().parse().unwrap();

    // The owner gives Cara access to Ada on the Household page.
    let browser = Browser::start();
    sign_in(&browser, &server);
    browser.goto(&server.url("/app/admin"));
    // Roles change in place; Cara is made an administrator and back.
    let role_select = format!("#role-{membership}");
    for role in ["administrator", "member"] {
        browser.select(&role_select, role);
        browser.wait_for_text("Role changed");
        wait_until("the role to change", || {
            api.call("GET", "/admin/memberships", None)["data"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["id"] == membership && m["role"] == role)
        });
    }
    browser.click_button("Give access");
    browser.select("#gr-member", &membership.to_string());
    browser.select("#gr-person", &ada["id"].to_string());
    browser.select("#gr-level", "record");
    browser.select("#gr-rel", "carer");
    browser.assert_accessible("access dialog");
    browser.click("dialog form button[type=submit]");
    browser.wait_for_text("Access given");
    let grants = api.call("GET", "/admin/person_access_grants", None);
    assert!(
        grants["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["membership_id"] == membership
                && g["person_id"] == ada["id"]
                && g["access_level"] == "record"),
        "{grants}"
    );
    browser.click_button("Sign out");
    browser.find("#sign-in");

    sign_in_as(&browser, &server, "cara@example.org");
    browser.wait_for_text("Vitamin D");
    let text = browser.text();
    assert!(
        text.contains("Ada") && text.contains("Cara Carer"),
        "{text}"
    );
    assert!(!text.contains("Olive Owner"), "{text}");
    // Household administration is not offered to a member.
    assert_eq!(
        browser.run(
            "return !!document.querySelector('a[href=\"/app/admin\"]')",
            json!([])
        ),
        json!(false)
    );
    browser.click_button("Take");
    browser.wait_for_text("Recorded: Vitamin D");
    assert_eq!(api.supply(&med), "29");
}

#[test]
fn an_account_in_two_households_switches_between_them() {
    if skipped("an_account_in_two_households_switches_between_them") {
        return;
    }
    let _one = one_at_a_time();
    let (dir, data, _) = set_up_household();
    process::setup_with(&data, "other@example.org", &["--another-household"]).assert_success();
    let server = Server::start(&data, &dir.path().join("serve.log"));
    let issued = token_create(&data, "2", "other@example.org", &[]);
    issued.assert_success();
    let other = Api {
        port: server.port,
        token: issued.single_stdout_line().to_string(),
        household: "2".into(),
    };
    let invitation = other.call(
        "POST",
        "/admin/invitations",
        Some(
            json!({"household_invitation": {"email": OWNER, "role": "member",
            "person": {"name": "Visiting Olive", "date_of_birth": "1980-01-01"}}}),
        ),
    );
    let url = invitation["data"]["accept_url"].as_str().unwrap();
    let token = url.split("token=").nth(1).unwrap().to_string();

    let browser = Browser::start();
    sign_in(&browser, &server);
    browser.wait_for_text("Olive Owner");
    // Accepted with the app's own signed-in session, as the invitation page would.
    let accepted = browser.run_async(&format!(
        "const done = arguments[arguments.length - 1];
         const api = document.querySelector('script[type=module]').src.replace('main.js', 'api.js');
         import(api).then(m => m.post('/invitations/accept', {{token: '{token}'}}))
           .then(r => done(r.status), e => done(String(e)));"
    ));
    assert_eq!(accepted, json!(200));
    browser.goto(&server.url("/app/today"));
    browser.find("#household-switch");
    browser.assert_accessible("Today with the household switcher");
    browser.select("#household-switch", "2");
    browser.wait_for_text("Visiting Olive");
    assert!(!browser.text().contains("Olive Owner"));
    // The choice is kept for the next visit.
    browser.goto(&server.url("/app/today"));
    browser.wait_for_text("Visiting Olive");
}

/// The access token the app holds now (from its own auth module).
fn app_access_token(browser: &Browser) -> String {
    browser
        .run_async(
            "const done = arguments[arguments.length - 1];
             const auth = document.querySelector('script[type=module]').src.replace('main.js', 'auth.js');
             import(auth).then(m => m.accessToken()).then(done, e => done('error: ' + e));",
        )
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_access_token_is_refreshed_silently_before_it_expires() {
    if skipped("the_access_token_is_refreshed_silently_before_it_expires") {
        return;
    }
    let _one = one_at_a_time();
    let (dir, data, _) = set_up_household();
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--rate-limit",
        "0",
    ]);
    // The shortest lifetime the server allows: the app refreshes halfway.
    cmd.env("PILLBOX_ACCESS_TOKEN_TTL", "60")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    let _guard = Guard(cmd.spawn().unwrap());
    wait_until("the server to answer", || {
        process::http_get(port, "/api/v1/capabilities", None).is_ok()
    });
    let server = Server {
        port,
        guard: None,
        data: data.clone(),
        log: dir.path().join("serve.log"),
    };
    let browser = Browser::start();
    sign_in(&browser, &server);
    browser.wait_for_text("Olive Owner");
    let first = app_access_token(&browser);
    assert!(first.starts_with("pbx_at_"), "{first}");
    std::thread::sleep(Duration::from_secs(40));
    // 20 s before the first one expires, the app already holds a new one.
    let second = app_access_token(&browser);
    assert!(second.starts_with("pbx_at_"), "{second}");
    assert_ne!(first, second);
    browser.goto(&server.url("/app/people"));
    browser.wait_for_text("Olive Owner");
}

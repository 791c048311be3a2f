//! Sync benchmark: starts the release-built `pillbox` binary on a fresh data
//! directory, seeds one household with 4 people, 20 medications and 3 years
//! of medication takes (50,000 by default), then times three sync
//! operations, each beside the same work done by a raw rusqlite loop in this
//! process on the same database in the same run (the ceiling):
//!
//! - `GET /api/v1/households/{id}/sync/snapshot` (getSyncSnapshot): the
//!   whole household. Timed to the last byte of the body; the server's peak
//!   memory during the request is measured too. The ceiling runs plain
//!   SELECTs over the same collections, in one read transaction, with the
//!   same joins and order as `src/sync/snapshot_store.rs` (without the
//!   per-person access predicate: the owner sees everyone), and serializes
//!   every row with serde_json into one `Vec<u8>` (no intermediate records).
//! - `POST /api/v1/households/{id}/sync/batches` (createSyncBatch) with 200
//!   `create medication_take` operations. The ceiling, in a copy of the
//!   database (`VACUUM INTO`, WAL, synchronous=FULL, foreign keys on, as the
//!   server's connection), writes the same rows in one transaction: per take
//!   it looks up the source and the medication, inserts the take and its
//!   change-feed entry, updates the medication's stock and appends that
//!   change-feed entry, then commits once.
//! - `GET /api/v1/households/{id}/sync/changes` (getSyncChanges): the last
//!   10,000 feed entries (what a phone that was away for a while reads;
//!   every take adds two: the take and its medication's stock), from a
//!   cursor 10,000 entries before the end, in pages of 1,000 until
//!   `has_more` is false. The ceiling SELECTs the same 10,000 rows (joined
//!   to people for the person's portable id) in one query and serializes
//!   them into one `Vec<u8>`.
//!
//! The scenarios run in that order (the batches add their takes after the
//! reads are measured). Every scenario runs `PILLBOX_BENCH_ITERATIONS`
//! rounds; each round runs the ceiling and then pillbox, so both see the
//! same machine noise; the table gives the median and the minimum. Pillbox
//! times include this process's HTTP client work (writing the request,
//! reading and de-chunking the body, reading each feed page's cursor). Peak memory is measured for the
//! snapshot: the growth of the peak resident set size (VmHWM, reset by
//! writing "5" to `/proc/<pid>/clear_refs` just before) over the resident
//! size at the reset, of the server process for pillbox and of this process
//! for the ceiling (which holds its whole output in one buffer), with the
//! server's absolute VmHWM beside it. The table gives the largest growth of
//! any round: in practice the first, as later rounds reuse memory the
//! allocator kept from earlier ones (which is also why the feed and batch
//! scenarios, run after the snapshot, get no memory figure).
//! Seeding uses the same batch endpoint (200 takes per batch, in time order,
//! each with its own client_uuid) and its time is printed as well.
//!
//! Run with `cargo bench --bench sync`. Settings (environment):
//!
//! | Variable | Default | Meaning |
//! |---|---|---|
//! | `PILLBOX_BENCH_ITERATIONS` | `10` | Rounds per scenario |
//! | `PILLBOX_BENCH_TAKES` | `50000` | Takes seeded over the 3 years |
//! | `PILLBOX_BENCH_DIR` | system temp dir | Where the temporary data directory goes (its file system decides fsync cost) |
//! | `PILLBOX_BENCH_BINARY` | the bench-profile build | Another `pillbox` binary to measure (e.g. a static build) |
//!
//! All traffic goes to 127.0.0.1 on one keep-alive connection, one request
//! at a time; every response status and record count is checked. The
//! server child process is killed when the guard holding it drops. The
//! server logs each request as it does in production (`RUST_LOG` is passed
//! through) to `serve.log` in the temporary data directory.

mod common;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use rusqlite::types::ValueRef;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior, params,
};
use rust_decimal::Decimal;
use serde::de::IgnoredAny;
use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use common::{
    BenchResult, HttpConn, Names, Pillbox, Request, Response, load_average, memory, print_machine,
    reset_peak_memory, stat_cpu,
};

/// People in the household, the owner's own person included.
const PEOPLE: usize = 4;
const MEDICATIONS: usize = 20;
/// Sources (schedules and direct assignments) per person, one medication each.
const SOURCES_PER_PERSON: usize = MEDICATIONS / PEOPLE;
/// The seeded takes span this many days, ending now.
const HISTORY_DAYS: i64 = 3 * 365 + 1;
/// Operations per sync batch: the API's maximum.
const BATCH_OPERATIONS: usize = 200;
/// Change-feed entries the feed scenario reads, and its page size.
const FEED_ENTRIES: usize = 10_000;
const FEED_PAGE: usize = 1_000;
/// Every medication's starting stock: more than any run deducts.
const SUPPLY: &str = "1000000";
/// Largest response the client accepts, and how long one request may take.
const MAX_BODY: usize = 1 << 30;
const SLOW_REQUEST: Duration = Duration::from_secs(300);

fn main() {
    // `cargo bench` passes `--bench`; anything else (`cargo test --benches`,
    // `cargo test --all-targets`) only checks that the benchmark builds.
    if !std::env::args().any(|a| a == "--bench") {
        println!("sync benchmark: skipped (run it with `cargo bench --bench sync`)");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(message) = runtime.block_on(run()) {
        eprintln!("sync benchmark failed: {message}");
        std::process::exit(1);
    }
}

struct Settings {
    iterations: usize,
    takes: usize,
    base_dir: Option<PathBuf>,
}

impl Settings {
    fn from_env() -> BenchResult<Settings> {
        let count = |name: &str, default: usize, max: usize| -> BenchResult<usize> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .replace('_', "")
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("{name}={v:?} must be a whole number from 1 to {max}")),
                Err(_) => Ok(default),
            }
        };
        Ok(Settings {
            iterations: count("PILLBOX_BENCH_ITERATIONS", 10, 1000)?,
            takes: count("PILLBOX_BENCH_TAKES", 50_000, 5_000_000)?,
            base_dir: std::env::var_os("PILLBOX_BENCH_DIR").map(PathBuf::from),
        })
    }
}

async fn run() -> BenchResult<()> {
    let settings = Settings::from_env()?;
    let data = match &settings.base_dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("pillbox-bench")
            .tempdir_in(dir),
        None => tempfile::Builder::new().prefix("pillbox-bench").tempdir(),
    }
    .map_err(|e| format!("cannot create the temporary data directory: {e}"))?;

    print_machine(data.path());
    println!(
        "settings: {} people, {MEDICATIONS} medications, {} takes over {HISTORY_DAYS} days; \
         {} rounds per scenario",
        PEOPLE, settings.takes, settings.iterations
    );

    let names = Names {
        household: "Sync benchmark",
        token: "sync benchmark",
    };
    let (server, household, token) = Pillbox::start(data.path(), names).await?;
    println!(
        "pillbox {} on {} (pid {})",
        server.binary.display(),
        server.addr,
        server.child.id()
    );
    let mut api = Api {
        server: &server,
        conn: None,
        prefix: format!("/api/v1/households/{household}"),
        token,
    };

    let fixture = seed(&mut api, settings.takes).await?;
    let db_path = data.path().join(pillbox::db::DATABASE_FILE);
    let raw = Connection::open_with_flags(
        &db_path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {} read-only: {e}", db_path.display()))?;
    raw.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
    let (takes, feed): (i64, i64) = raw
        .query_row(
            "SELECT (SELECT count(*) FROM medication_takes WHERE household_id = ?1),
                    (SELECT count(*) FROM change_feed WHERE household_id = ?1)",
            [household],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql)?;
    if takes != settings.takes as i64 {
        return Err(format!(
            "the database holds {takes} takes, not {}",
            settings.takes
        ));
    }
    println!(
        "database: {takes} takes, {feed} change-feed entries, {:.1} MiB (+ WAL)",
        file_mib(&db_path)
    );

    let server_pid = server.child.id().to_string();
    let mut rows = Vec::new();
    rows.push(
        snapshot_scenario(&mut api, &raw, household, &fixture, &settings, &server_pid).await?,
    );
    rows.push(feed_scenario(&mut api, &raw, household, &settings, &server_pid).await?);
    let copy = data.path().join("ceiling.sqlite3");
    rows.push(batch_scenario(&mut api, &raw, &copy, &fixture, &settings, &server_pid).await?);

    println!();
    println!(
        "seeding: {} takes in {} batches of {BATCH_OPERATIONS} in {:.1} s \
         ({:.0} takes/s; batch median {:.1} ms, first {:.1} ms, last {:.1} ms)",
        settings.takes,
        fixture.seed_batches.len(),
        fixture.seed_time.as_secs_f64(),
        settings.takes as f64 / fixture.seed_time.as_secs_f64(),
        ms(median(&fixture.seed_batches)),
        ms(fixture.seed_batches.first().copied().unwrap_or_default()),
        ms(fixture.seed_batches.last().copied().unwrap_or_default()),
    );
    for row in &rows {
        row.print_details();
    }
    println!();
    print_table(&rows);
    println!("load average after the run: {}", load_average());

    drop(api);
    drop(raw);
    drop(server);
    drop(data);
    Ok(())
}

fn sql(e: rusqlite::Error) -> String {
    format!("sqlite: {e}")
}

fn file_mib(path: &Path) -> f64 {
    std::fs::metadata(path)
        .map(|m| m.len() as f64 / (1024.0 * 1024.0))
        .unwrap_or(f64::NAN)
}

// ---------------------------------------------------------------------------
// Talking to pillbox

/// One keep-alive connection to the server, reopened when the server closes it.
struct Api<'a> {
    server: &'a Pillbox,
    conn: Option<HttpConn>,
    /// `/api/v1/households/{id}`.
    prefix: String,
    token: String,
}

impl Api<'_> {
    async fn send(&mut self, request: &Request) -> BenchResult<Response> {
        let conn = match self.conn.as_mut() {
            Some(conn) => conn,
            None => {
                let conn = HttpConn::connect_within(self.server.addr)
                    .await?
                    .with_limits(MAX_BODY, SLOW_REQUEST);
                self.conn.insert(conn)
            }
        };
        let result = conn.send_within(request).await;
        if !matches!(&result, Ok(response) if !response.close) {
            self.conn = None;
        }
        result
    }

    async fn get(&mut self, path: &str) -> BenchResult<Response> {
        let request = Request::get(&format!("{}{path}", self.prefix), Some(&self.token));
        self.send(&request).await
    }

    fn post_request(&self, path: &str, body: &Value) -> Request {
        Request::post(&format!("{}{path}", self.prefix), &self.token, body)
    }

    /// A POST answered `expected`; its body's `data`.
    async fn post(
        &mut self,
        what: &str,
        path: &str,
        body: &Value,
        expected: u16,
    ) -> BenchResult<Value> {
        let request = self.post_request(path, body);
        let response = self
            .send(&request)
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        data_of(what, &response, expected)
    }
}

/// The `data` of a response with the expected status.
fn data_of(what: &str, response: &Response, expected: u16) -> BenchResult<Value> {
    if response.status != expected {
        return Err(format!(
            "{what} answered {}: {}",
            response.status,
            response.body_text()
        ));
    }
    let mut body: Value =
        serde_json::from_slice(&response.body).map_err(|e| format!("{what} body: {e}"))?;
    Ok(body["data"].take())
}

fn portable_id(what: &str, data: &Value) -> BenchResult<String> {
    data["portable_id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{what} returned no portable_id: {data}"))
}

// ---------------------------------------------------------------------------
// Seeding

/// A schedule or direct assignment takes are recorded under.
struct Source {
    /// `schedule` or `person_medication`.
    kind: &'static str,
    portable_id: String,
}

struct Fixture {
    sources: Vec<Source>,
    seed_time: Duration,
    seed_batches: Vec<Duration>,
}

/// 4 people (the owner's own and three more), 20 medications, 5 sources per
/// person (3 daily schedules, a routine and an as-needed assignment), then
/// `takes` takes spread evenly over the last 3 years, round-robin over the
/// sources, sent as sync batches of 200 in time order.
async fn seed(api: &mut Api<'_>, takes: usize) -> BenchResult<Fixture> {
    let started = Instant::now();
    let listed = api.get("/people?per_page=100").await?;
    let listed = data_of("listPeople", &listed, 200)?;
    let mut people: Vec<i64> = listed
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["id"].as_i64()).collect())
        .unwrap_or_default();
    if people.len() != 1 {
        return Err(format!(
            "expected the owner's own person only, found {}",
            people.len()
        ));
    }
    let others = [
        ("Ada Benchmark", "1950-02-03"),
        ("Ben Benchmark", "1984-07-19"),
        ("Cleo Benchmark", "2016-05-30"),
    ];
    for (name, born) in others.iter().take(PEOPLE - 1) {
        let body = json!({"person": {"name": name, "date_of_birth": born}});
        let person = api.post("createPerson", "/people", &body, 201).await?;
        people.push(person["id"].as_i64().ok_or("createPerson returned no id")?);
    }

    let mut medications = Vec::with_capacity(MEDICATIONS);
    for i in 0..MEDICATIONS {
        let body = json!({"medication": {
            "name": format!("Benchmark medication {i:02} 500mg tablets"),
            "friendly_name": format!("Medication {i:02}"),
            "category": "benchmark",
            "dose_amount": "1",
            "dose_unit": "tablet",
            "current_supply": SUPPLY,
            "reorder_threshold": "10",
        }});
        let medication = api
            .post("createMedication", "/medications", &body, 201)
            .await?;
        medications.push(
            medication["id"]
                .as_i64()
                .ok_or("createMedication returned no id")?,
        );
    }

    let first_day = (Timestamp::now() - SignedDuration::from_hours(24 * HISTORY_DAYS))
        .strftime("%Y-%m-%d")
        .to_string();
    let doses: [&[&str]; 3] = [
        &["08:00"],
        &["08:00", "20:00"],
        &["07:30", "13:00", "19:00"],
    ];
    let mut sources = Vec::with_capacity(MEDICATIONS);
    for (p, person) in people.iter().enumerate() {
        for k in 0..SOURCES_PER_PERSON {
            let medication = medications[p * SOURCES_PER_PERSON + k];
            let source = match k {
                0..=2 => {
                    let body = json!({"schedule": {
                        "person_id": person, "medication_id": medication,
                        "schedule_type": "daily", "schedule_config": {"times": doses[k]},
                        "start_date": first_day,
                    }});
                    let created = api.post("createSchedule", "/schedules", &body, 201).await?;
                    Source {
                        kind: "schedule",
                        portable_id: portable_id("createSchedule", &created)?,
                    }
                }
                _ => {
                    let mut attributes = json!({"person_id": person, "medication_id": medication});
                    if k == 4 {
                        attributes["administration_kind"] = json!("as_needed");
                        attributes["min_hours_between_doses"] = json!("4");
                        attributes["max_daily_doses"] = json!(4);
                    }
                    let body = json!({"person_medication": attributes});
                    let created = api
                        .post("createPersonMedication", "/person_medications", &body, 201)
                        .await?;
                    Source {
                        kind: "person_medication",
                        portable_id: portable_id("createPersonMedication", &created)?,
                    }
                }
            };
            sources.push(source);
        }
    }
    println!(
        "seeded {} people, {} medications, {} sources in {:.2} s",
        people.len(),
        medications.len(),
        sources.len(),
        started.elapsed().as_secs_f64()
    );

    // Evenly spaced whole seconds from 3 years ago to a minute ago.
    let now = Timestamp::now().as_second();
    let first = now - HISTORY_DAYS * 24 * 3600;
    let step = (now - 60 - first) as f64 / takes as f64;
    let started = Instant::now();
    let mut batches = Vec::with_capacity(takes.div_ceil(BATCH_OPERATIONS));
    let mut next = 0usize;
    while next < takes {
        let end = (next + BATCH_OPERATIONS).min(takes);
        let ops: Vec<Value> = (next..end)
            .map(|k| {
                let at = Timestamp::from_second(first + (k as f64 * step) as i64)
                    .unwrap_or(Timestamp::UNIX_EPOCH);
                take_operation(&sources[k % sources.len()], at)
            })
            .collect();
        let body = json!({"batch": {"operations": ops}});
        let request = api.post_request("/sync/batches", &body);
        let sent = Instant::now();
        let response = api
            .send(&request)
            .await
            .map_err(|e| format!("createSyncBatch: {e}"))?;
        batches.push(sent.elapsed());
        check_batch(&response, end - next)?;
        next = end;
        if batches.len() % 50 == 0 || next == takes {
            println!(
                "  {next} / {takes} takes ({:.1} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(Fixture {
        sources,
        seed_time: started.elapsed(),
        seed_batches: batches,
    })
}

fn take_operation(source: &Source, at: Timestamp) -> Value {
    json!({"action": "create", "resource_type": "medication_take", "attributes": {
        "source_type": source.kind,
        "source_id": source.portable_id,
        "taken_at": at.to_string(),
        "client_uuid": uuid::Uuid::now_v7().to_string(),
    }})
}

/// A batch answered 201 with one applied result per operation.
fn check_batch(response: &Response, operations: usize) -> BenchResult<()> {
    let data = data_of("createSyncBatch", response, 201)?;
    let results = data["results"].as_array().map_or(0, Vec::len);
    if data["applied"] != json!(true) || results != operations {
        return Err(format!(
            "createSyncBatch applied {results} of {operations} operations"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Measurements

/// One timed run: how long, how many bytes, and the peak memory growth.
#[derive(Clone, Copy)]
struct Sample {
    time: Duration,
    bytes: usize,
    /// VmHWM after minus VmRSS at the reset (KiB), where readable.
    growth_kib: Option<u64>,
    /// VmHWM after (KiB).
    peak_kib: Option<u64>,
}

/// Resets the peak memory of `pid` and returns the resident size then.
fn start_memory(pid: &str) -> Option<u64> {
    if !reset_peak_memory(pid) {
        return None;
    }
    memory(pid).map(|m| m.rss_kib)
}

fn sample(time: Duration, bytes: usize, pid: &str, rss_at_reset: Option<u64>) -> Sample {
    let peak = rss_at_reset.and(memory(pid)).map(|m| m.hwm_kib);
    Sample {
        time,
        bytes,
        growth_kib: rss_at_reset
            .zip(peak)
            .map(|(before, peak)| peak.saturating_sub(before)),
        peak_kib: peak,
    }
}

fn server_cpu(pid: &str) -> Option<Duration> {
    stat_cpu(&format!("/proc/{pid}/stat"))
}

/// One scenario's samples and what the report says about it.
struct Scenario {
    name: String,
    pillbox: Vec<Sample>,
    ceiling: Vec<Sample>,
    /// Server CPU time (user + system) per pillbox run.
    server_cpu: Option<Duration>,
    /// Whether the peak memory figures mean something (see `Sample`).
    memory: bool,
    notes: String,
}

impl Scenario {
    fn print_details(&self) {
        let list = |samples: &[Sample]| -> String {
            samples
                .iter()
                .map(|s| format!("{:.1}", ms(s.time)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("{}:", self.name);
        println!("  pillbox ms: {}", list(&self.pillbox));
        println!("  ceiling ms: {}", list(&self.ceiling));
        if let Some(cpu) = self.server_cpu {
            println!("  server CPU per run: {:.1} ms", ms(cpu));
        }
        let growth = |samples: &[Sample]| -> String {
            samples
                .iter()
                .map(|s| {
                    s.growth_kib
                        .map_or("n/a".into(), |k| format!("{:.1}", mib(k)))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.memory {
            println!("  pillbox peak growth MiB: {}", growth(&self.pillbox));
            println!("  ceiling peak growth MiB: {}", growth(&self.ceiling));
        }
    }
}

/// 50000 as "50,000".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

fn times(samples: &[Sample]) -> Vec<Duration> {
    samples.iter().map(|s| s.time).collect()
}

// ---------------------------------------------------------------------------
// Scenario: the snapshot

async fn snapshot_scenario(
    api: &mut Api<'_>,
    raw: &Connection,
    household: i64,
    fixture: &Fixture,
    settings: &Settings,
    server_pid: &str,
) -> BenchResult<Scenario> {
    let mut scenario = Scenario {
        name: format!(
            "sync snapshot ({PEOPLE} people, {MEDICATIONS} medications, {} takes)",
            thousands(settings.takes)
        ),
        pillbox: Vec::new(),
        ceiling: Vec::new(),
        server_cpu: None,
        memory: true,
        notes: String::new(),
    };
    let expected = Counts {
        people: PEOPLE,
        medications: MEDICATIONS,
        sources: fixture.sources.len(),
        takes: settings.takes,
    };
    let mut cpu = Duration::ZERO;
    for round in 0..settings.iterations {
        let rss = start_memory("self");
        let started = Instant::now();
        let body = ceiling_snapshot(raw, household)?;
        scenario
            .ceiling
            .push(sample(started.elapsed(), body.len(), "self", rss));
        if round == 0 {
            expected.check("ceiling snapshot", &body)?;
        }
        drop(body);

        let rss = start_memory(server_pid);
        let cpu_before = server_cpu(server_pid);
        let started = Instant::now();
        let response = api.get("/sync/snapshot").await?;
        let elapsed = started.elapsed();
        let done = sample(elapsed, response.body.len(), server_pid, rss);
        if let Some((before, after)) = cpu_before.zip(server_cpu(server_pid)) {
            cpu += after.saturating_sub(before);
        }
        if response.status != 200 {
            return Err(format!(
                "getSyncSnapshot answered {}: {}",
                response.status,
                response.body_text()
            ));
        }
        scenario.pillbox.push(done);
        if round == 0 {
            expected.check("getSyncSnapshot", &response.body)?;
        }
    }
    scenario.server_cpu = Some(cpu / settings.iterations as u32);
    let bytes = |s: &[Sample]| s.first().map_or(0, |s| s.bytes);
    scenario.notes = format!(
        "body {:.1} MB (ceiling {:.1} MB); pillbox timed to the last byte over loopback HTTP",
        bytes(&scenario.pillbox) as f64 / 1e6,
        bytes(&scenario.ceiling) as f64 / 1e6,
    );
    Ok(scenario)
}

/// What a snapshot must hold.
struct Counts {
    people: usize,
    medications: usize,
    sources: usize,
    takes: usize,
}

impl Counts {
    fn check(&self, what: &str, body: &[u8]) -> BenchResult<()> {
        let body: Value =
            serde_json::from_slice(body).map_err(|e| format!("{what}: not JSON: {e}"))?;
        let records = &body["data"]["records"];
        let count = |name: &str| records[name].as_array().map_or(usize::MAX, Vec::len);
        let found = (
            count("people"),
            count("medications"),
            count("schedules") + count("person_medications"),
            count("medication_takes"),
        );
        if found != (self.people, self.medications, self.sources, self.takes) {
            return Err(format!(
                "{what} holds (people, medications, sources, takes) = {found:?}, expected ({}, {}, {}, {})",
                self.people, self.medications, self.sources, self.takes
            ));
        }
        if body["data"]["cursor"].as_str().is_none_or(str::is_empty) {
            return Err(format!("{what} has no cursor"));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Scenario: the change feed

async fn feed_scenario(
    api: &mut Api<'_>,
    raw: &Connection,
    household: i64,
    settings: &Settings,
    server_pid: &str,
) -> BenchResult<Scenario> {
    // The cursor 10,000 entries before the end (or the start of a shorter feed).
    let total: i64 = raw
        .query_row(
            "SELECT count(*) FROM change_feed WHERE household_id = ?1",
            [household],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let entries = FEED_ENTRIES.min(total as usize);
    let after: i64 = raw
        .query_row(
            "SELECT seq FROM change_feed WHERE household_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2",
            params![household, entries as i64],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?
        .unwrap_or(0);
    let cursor = pillbox::sync::changes::encode_cursor(household, after);

    let mut scenario = Scenario {
        name: format!(
            "change feed read ({} entries, pages of {})",
            thousands(entries),
            thousands(FEED_PAGE)
        ),
        pillbox: Vec::new(),
        ceiling: Vec::new(),
        server_cpu: None,
        memory: false,
        notes: String::new(),
    };
    let mut cpu = Duration::ZERO;
    let mut pages = 0;
    for _ in 0..settings.iterations {
        let rss = start_memory("self");
        let started = Instant::now();
        let body = ceiling_feed(raw, household, after)?;
        scenario
            .ceiling
            .push(sample(started.elapsed(), body.len(), "self", rss));
        let read: Envelope<FeedPage> = serde_json::from_slice(&body)
            .map_err(|e| format!("ceiling feed: not a feed page: {e}"))?;
        if read.data.changes.len() + read.data.tombstones.len() != entries {
            return Err(format!(
                "ceiling feed read {} entries, expected {entries}",
                read.data.changes.len() + read.data.tombstones.len()
            ));
        }
        drop(body);

        let rss = start_memory(server_pid);
        let cpu_before = server_cpu(server_pid);
        let started = Instant::now();
        let mut next = cursor.clone();
        let (mut read, mut bytes) = (0usize, 0usize);
        pages = 0;
        loop {
            let response = api
                .get(&format!("/sync/changes?cursor={next}&limit={FEED_PAGE}"))
                .await?;
            if response.status != 200 {
                return Err(format!(
                    "getSyncChanges answered {}: {}",
                    response.status,
                    response.body_text()
                ));
            }
            bytes += response.body.len();
            pages += 1;
            let page: Envelope<FeedPage> = serde_json::from_slice(&response.body)
                .map_err(|e| format!("getSyncChanges: not a feed page: {e}"))?;
            read += page.data.changes.len() + page.data.tombstones.len();
            if !page.data.has_more {
                break;
            }
            next = page.data.next_cursor;
        }
        let elapsed = started.elapsed();
        scenario
            .pillbox
            .push(sample(elapsed, bytes, server_pid, rss));
        if let Some((before, after)) = cpu_before.zip(server_cpu(server_pid)) {
            cpu += after.saturating_sub(before);
        }
        if read != entries {
            return Err(format!(
                "getSyncChanges read {read} entries, expected {entries}"
            ));
        }
    }
    scenario.server_cpu = Some(cpu / settings.iterations as u32);
    scenario.notes = format!(
        "pillbox: {pages} requests from a cursor {} entries before the end, {:.1} MB in all; \
         ceiling: one SELECT of the same rows, {:.1} MB",
        thousands(entries),
        scenario.pillbox.first().map_or(0, |s| s.bytes) as f64 / 1e6,
        scenario.ceiling.first().map_or(0, |s| s.bytes) as f64 / 1e6,
    );
    Ok(scenario)
}

#[derive(Deserialize)]
struct Envelope<T> {
    data: T,
}

/// The parts of a feed page the reader needs: entries are only counted.
#[derive(Deserialize)]
struct FeedPage {
    changes: Vec<IgnoredAny>,
    tombstones: Vec<IgnoredAny>,
    next_cursor: String,
    has_more: bool,
}

// ---------------------------------------------------------------------------
// Scenario: a batch of 200 takes

async fn batch_scenario(
    api: &mut Api<'_>,
    raw: &Connection,
    copy_path: &Path,
    fixture: &Fixture,
    settings: &Settings,
    server_pid: &str,
) -> BenchResult<Scenario> {
    // The ceiling writes into a copy of the seeded database, on the same
    // file system, with the server's connection settings.
    let _ = std::fs::remove_file(copy_path);
    raw.execute("VACUUM INTO ?1", [copy_path.to_string_lossy()])
        .map_err(|e| format!("cannot copy the database: {e}"))?;
    let copy = Connection::open(copy_path).map_err(sql)?;
    copy.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql)?;
    copy.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
        .map_err(sql)?;
    let ids: (i64, i64) = copy
        .query_row(
            "SELECT household_id, id FROM memberships ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql)?;

    let mut scenario = Scenario {
        name: format!("sync batch ({BATCH_OPERATIONS} create medication_take)"),
        pillbox: Vec::new(),
        ceiling: Vec::new(),
        server_cpu: None,
        memory: false,
        notes: String::new(),
    };
    let mut cpu = Duration::ZERO;
    // The measured takes: 10 a second over the last minutes, after every
    // seeded take, round-robin over the sources.
    let total = (settings.iterations * BATCH_OPERATIONS) as i64;
    let first = Timestamp::now().as_second() - total / 10 - 1;
    for round in 0..settings.iterations {
        let takes: Vec<(usize, Timestamp)> = (0..BATCH_OPERATIONS)
            .map(|j| {
                let k = round * BATCH_OPERATIONS + j;
                let at =
                    Timestamp::from_second(first + k as i64 / 10).unwrap_or(Timestamp::UNIX_EPOCH);
                (k % fixture.sources.len(), at)
            })
            .collect();

        let rss = start_memory("self");
        let started = Instant::now();
        ceiling_batch(&copy, ids, &fixture.sources, &takes)?;
        scenario
            .ceiling
            .push(sample(started.elapsed(), 0, "self", rss));

        let ops: Vec<Value> = takes
            .iter()
            .map(|(source, at)| take_operation(&fixture.sources[*source], *at))
            .collect();
        let request = api.post_request("/sync/batches", &json!({"batch": {"operations": ops}}));
        let rss = start_memory(server_pid);
        let cpu_before = server_cpu(server_pid);
        let started = Instant::now();
        let response = api
            .send(&request)
            .await
            .map_err(|e| format!("createSyncBatch: {e}"))?;
        let elapsed = started.elapsed();
        scenario
            .pillbox
            .push(sample(elapsed, response.body.len(), server_pid, rss));
        if let Some((before, after)) = cpu_before.zip(server_cpu(server_pid)) {
            cpu += after.saturating_sub(before);
        }
        check_batch(&response, BATCH_OPERATIONS)?;
    }
    scenario.server_cpu = Some(cpu / settings.iterations as u32);
    scenario.notes = format!(
        "one transaction, fsynced (synchronous=FULL, WAL) before the answer; ceiling writes the \
         same rows ({BATCH_OPERATIONS} takes, {} feed entries, {BATCH_OPERATIONS} stock updates)",
        2 * BATCH_OPERATIONS
    );
    drop(copy);
    let _ = std::fs::remove_file(copy_path);
    Ok(scenario)
}

// ---------------------------------------------------------------------------
// The ceiling: the same work as a raw rusqlite loop in this process

/// How a column becomes a JSON value.
#[derive(Clone, Copy)]
enum Kind {
    /// As stored: null, integer, real or text.
    Plain,
    /// An integer 0/1 as false/true.
    Bool,
    /// Text holding JSON, parsed and written as JSON.
    Json,
    /// An integer written as a string (the feed's record_id).
    IdText,
    /// The etag from this column (lock_version) and column 0 (portable_id).
    Etag,
    /// `{"person_portable_id": value}` (the feed's metadata).
    PersonMetadata,
}

use Kind::{Bool, Etag, IdText, Json, PersonMetadata, Plain};

/// One collection: its SQL (parameters ?1 household, ?2 when present the
/// feed position) and its output fields, one per column, in column order.
struct Collection {
    sql: &'static str,
    fields: &'static [(&'static str, Kind)],
}

const COMMON: [(&str, Kind); 3] = [
    ("portable_id", Plain),
    ("updated_at", Plain),
    ("etag", Etag),
];

/// `[COMMON..., rest...]` as a static slice.
macro_rules! fields {
    ($($name:literal: $kind:expr),* $(,)?) => {
        &[COMMON[0], COMMON[1], COMMON[2], $(($name, $kind)),*]
    };
}

static PEOPLE_SQL: Collection = Collection {
    sql: "SELECT p.portable_id, p.updated_at, p.lock_version, p.name, p.email, p.date_of_birth,
                 p.person_type, p.has_capacity,
                 (SELECT json_group_array(l.portable_id ORDER BY l.id)
                  FROM location_memberships lm
                  JOIN locations l ON l.id = lm.location_id AND l.deleted_at IS NULL
                  WHERE lm.person_id = p.id),
                 np.portable_id
          FROM people p
          LEFT JOIN notification_preferences np ON np.person_id = p.id
          WHERE p.household_id = ?1
          ORDER BY p.id",
    fields: fields![
        "name": Plain, "email": Plain, "date_of_birth": Plain, "person_type": Plain,
        "has_capacity": Bool, "location_portable_ids": Json,
        "notification_preference_portable_id": Plain,
    ],
};

static LOCATIONS_SQL: Collection = Collection {
    sql: "SELECT portable_id, updated_at, lock_version, name, description
          FROM locations WHERE household_id = ?1 AND deleted_at IS NULL ORDER BY id",
    fields: fields!["name": Plain, "description": Plain],
};

static MEDICATIONS_SQL: Collection = Collection {
    sql: "SELECT m.portable_id, m.updated_at, m.lock_version, l.portable_id, m.name,
                 m.friendly_name, m.category, m.description, m.dose_amount, m.dose_unit,
                 m.default_schedule_type, m.current_supply, m.reorder_threshold,
                 m.barcode, m.dmd_code, m.dmd_system, m.dmd_concept_class
          FROM medications m
          LEFT JOIN locations l ON l.id = m.location_id AND l.deleted_at IS NULL
          WHERE m.household_id = ?1 AND m.deleted_at IS NULL
          ORDER BY m.id",
    fields: fields![
        "location_portable_id": Plain, "name": Plain, "friendly_name": Plain,
        "category": Plain, "description": Plain, "dose_amount": Plain, "dose_unit": Plain,
        "default_schedule_type": Plain, "current_supply": Plain, "reorder_threshold": Plain,
        "barcode": Plain, "dmd_code": Plain, "dmd_system": Plain, "dmd_concept_class": Plain,
    ],
};

static DOSAGE_OPTIONS_SQL: Collection = Collection {
    sql: "SELECT d.portable_id, d.updated_at, d.lock_version, m.portable_id, d.amount,
                 d.unit, d.frequency, d.description, d.default_for_adults,
                 d.default_for_children, d.default_max_daily_doses,
                 d.default_min_hours_between_doses, d.default_dose_cycle,
                 d.current_supply, d.reorder_threshold
          FROM dosage_options d
          JOIN medications m ON m.id = d.medication_id AND m.deleted_at IS NULL
          WHERE d.household_id = ?1
          ORDER BY d.id",
    fields: fields![
        "medication_portable_id": Plain, "amount": Plain, "unit": Plain, "frequency": Plain,
        "description": Plain, "default_for_adults": Bool, "default_for_children": Bool,
        "default_max_daily_doses": Plain, "default_min_hours_between_doses": Plain,
        "default_dose_cycle": Plain, "current_supply": Plain, "reorder_threshold": Plain,
    ],
};

static SCHEDULES_SQL: Collection = Collection {
    sql: "SELECT s.portable_id, s.updated_at, s.lock_version, d.portable_id, s.retired_at,
                 p.portable_id, m.portable_id, s.dose_amount, s.dose_unit, s.frequency,
                 s.dose_cycle, s.max_daily_doses, s.min_hours_between_doses,
                 s.schedule_type, s.schedule_config, s.start_date, s.end_date, s.active,
                 s.notes
          FROM schedules s
          JOIN people p ON p.id = s.person_id
          JOIN medications m ON m.id = s.medication_id
          LEFT JOIN dosage_options d ON d.id = s.source_dosage_option_id
          WHERE s.household_id = ?1
          ORDER BY s.id",
    fields: fields![
        "source_dosage_option_portable_id": Plain, "retired_at": Plain,
        "person_portable_id": Plain, "medication_portable_id": Plain, "dose_amount": Plain,
        "dose_unit": Plain, "frequency": Plain, "dose_cycle": Plain, "max_daily_doses": Plain,
        "min_hours_between_doses": Plain, "schedule_type": Plain, "schedule_config": Json,
        "start_date": Plain, "end_date": Plain, "active": Bool, "notes": Plain,
    ],
};

static PERSON_MEDICATIONS_SQL: Collection = Collection {
    sql: "SELECT a.portable_id, a.updated_at, a.lock_version, d.portable_id, a.retired_at,
                 p.portable_id, m.portable_id, a.dose_amount, a.dose_unit, a.dose_cycle,
                 a.max_daily_doses, a.min_hours_between_doses, a.administration_kind,
                 a.active, a.notes, a.position
          FROM person_medications a
          JOIN people p ON p.id = a.person_id
          JOIN medications m ON m.id = a.medication_id
          LEFT JOIN dosage_options d ON d.id = a.source_dosage_option_id
          WHERE a.household_id = ?1
          ORDER BY a.person_id, a.position",
    fields: fields![
        "source_dosage_option_portable_id": Plain, "retired_at": Plain,
        "person_portable_id": Plain, "medication_portable_id": Plain, "dose_amount": Plain,
        "dose_unit": Plain, "dose_cycle": Plain, "max_daily_doses": Plain,
        "min_hours_between_doses": Plain, "administration_kind": Plain, "active": Bool,
        "notes": Plain, "position": Plain,
    ],
};

static TAKES_SQL: Collection = Collection {
    sql: "SELECT x.portable_id, x.updated_at, x.lock_version, x.client_uuid,
                 x.source_type, COALESCE(src_s.portable_id, src_pm.portable_id), x.taken_at,
                 x.dose_amount, x.dose_unit, tm.portable_id, tl.portable_id
          FROM medication_takes x
          JOIN people p ON p.id = x.person_id
          LEFT JOIN schedules src_s
            ON x.source_type = 'schedule' AND src_s.id = x.source_id
          LEFT JOIN person_medications src_pm
            ON x.source_type = 'person_medication' AND src_pm.id = x.source_id
          LEFT JOIN medications tm ON tm.id = x.taken_from_medication_id
          LEFT JOIN locations tl ON tl.id = x.taken_from_location_id
          WHERE x.household_id = ?1
          ORDER BY x.taken_at, x.id",
    fields: fields![
        "client_uuid": Plain, "source_type": Plain, "source_portable_id": Plain,
        "taken_at": Plain, "dose_amount": Plain, "dose_unit": Plain,
        "taken_from_medication_portable_id": Plain, "taken_from_location_portable_id": Plain,
    ],
};

static NOTIFICATION_PREFERENCES_SQL: Collection = Collection {
    sql: "SELECT n.portable_id, n.updated_at, n.lock_version, p.portable_id, n.enabled,
                 n.dose_due_enabled, n.missed_dose_enabled, n.low_stock_enabled,
                 n.private_text_enabled, n.morning_time, n.afternoon_time,
                 n.evening_time, n.night_time
          FROM notification_preferences n
          JOIN people p ON p.id = n.person_id
          WHERE n.household_id = ?1
          ORDER BY n.id",
    fields: fields![
        "person_portable_id": Plain, "enabled": Bool, "dose_due_enabled": Bool,
        "missed_dose_enabled": Bool, "low_stock_enabled": Bool, "private_text_enabled": Bool,
        "morning_time": Plain, "afternoon_time": Plain, "evening_time": Plain,
        "night_time": Plain,
    ],
};

static HEALTH_EVENTS_SQL: Collection = Collection {
    sql: "SELECT h.portable_id, h.updated_at, h.lock_version, p.portable_id, h.event_kind,
                 h.severity, h.title, h.notes, h.started_on, h.ended_on,
                 (SELECT json_group_array(m.portable_id ORDER BY m.id)
                  FROM health_event_medications hm
                  JOIN medications m ON m.id = hm.medication_id
                  WHERE hm.health_event_id = h.id)
          FROM health_events h
          JOIN people p ON p.id = h.person_id
          WHERE h.household_id = ?1 AND h.deleted_at IS NULL
          ORDER BY h.id",
    fields: fields![
        "person_portable_id": Plain, "event_kind": Plain, "severity": Plain, "title": Plain,
        "notes": Plain, "started_on": Plain, "ended_on": Plain,
        "medication_portable_ids": Json,
    ],
};

static PAUSE_PERIODS_SQL: Collection = Collection {
    sql: "SELECT x.portable_id, x.updated_at, x.lock_version, x.source_type,
                 COALESCE(src_s.portable_id, src_pm.portable_id), x.reason, x.note,
                 x.started_at, x.ended_at, x.created_at, x.legacy_context,
                 x.imported_context, rec_p.portable_id, res_p.portable_id
          FROM medication_pause_periods x
          JOIN people p ON p.id = x.person_id
          LEFT JOIN schedules src_s
            ON x.source_type = 'schedule' AND src_s.id = x.source_id
          LEFT JOIN person_medications src_pm
            ON x.source_type = 'person_medication' AND src_pm.id = x.source_id
          LEFT JOIN memberships rec ON rec.id = x.recorded_by_membership_id
          LEFT JOIN people rec_p ON rec_p.id = rec.person_id
          LEFT JOIN memberships res ON res.id = x.resumed_by_membership_id
          LEFT JOIN people res_p ON res_p.id = res.person_id
          WHERE x.household_id = ?1
          ORDER BY x.id",
    fields: fields![
        "source_type": Plain, "source_portable_id": Plain, "reason": Plain, "note": Plain,
        "started_at": Plain, "ended_at": Plain, "created_at": Plain, "legacy_context": Bool,
        "imported_context": Bool, "recorded_by_person_portable_id": Plain,
        "resumed_by_person_portable_id": Plain,
    ],
};

static DOSE_OCCURRENCES_SQL: Collection = Collection {
    sql: "SELECT x.portable_id, x.updated_at, x.lock_version, x.source_type,
                 COALESCE(src_s.portable_id, src_pm.portable_id), x.window_starts_on,
                 x.window_ends_on, x.position, x.scheduled_at, x.outcome, x.reason, x.note,
                 x.resolved_at, t.portable_id
          FROM dose_occurrences x
          JOIN people p ON p.id = x.person_id
          LEFT JOIN schedules src_s
            ON x.source_type = 'schedule' AND src_s.id = x.source_id
          LEFT JOIN person_medications src_pm
            ON x.source_type = 'person_medication' AND src_pm.id = x.source_id
          LEFT JOIN medication_takes t ON t.id = x.medication_take_id
          WHERE x.household_id = ?1
          ORDER BY x.id",
    fields: fields![
        "source_type": Plain, "source_portable_id": Plain, "window_starts_on": Plain,
        "window_ends_on": Plain, "position": Plain, "scheduled_at": Plain, "outcome": Plain,
        "reason": Plain, "note": Plain, "resolved_at": Plain,
        "medication_take_portable_id": Plain,
    ],
};

static FEED_SQL: Collection = Collection {
    sql: "SELECT c.seq, c.record_type, c.record_id, c.record_portable_id, c.action,
                 c.occurred_at, p.portable_id
          FROM change_feed c LEFT JOIN people p ON p.id = c.person_id
          WHERE c.household_id = ?1 AND c.seq > ?2
          ORDER BY c.seq",
    fields: &[
        ("id", Plain),
        ("record_type", Plain),
        ("record_id", IdText),
        ("record_portable_id", Plain),
        ("action", Plain),
        ("occurred_at", Plain),
        ("metadata", PersonMetadata),
    ],
};

/// A collection serialized straight from its rows (no records in between).
struct Rows<'c> {
    conn: &'c Connection,
    collection: &'static Collection,
    args: [i64; 2],
}

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut stmt = self
            .conn
            .prepare_cached(self.collection.sql)
            .map_err(S::Error::custom)?;
        let wanted = stmt.parameter_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(&self.args[..wanted]))
            .map_err(S::Error::custom)?;
        let mut seq = serializer.serialize_seq(None)?;
        while let Some(row) = rows.next().map_err(S::Error::custom)? {
            seq.serialize_element(&RowObject {
                row,
                fields: self.collection.fields,
            })?;
        }
        seq.end()
    }
}

struct RowObject<'r, 's> {
    row: &'r Row<'s>,
    fields: &'static [(&'static str, Kind)],
}

impl Serialize for RowObject<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (i, (name, kind)) in self.fields.iter().enumerate() {
            let value = self.row.get_ref(i).map_err(S::Error::custom)?;
            match kind {
                Plain => map.serialize_entry(name, &Sql(value))?,
                Bool => match value {
                    ValueRef::Integer(n) => map.serialize_entry(name, &(n != 0))?,
                    other => map.serialize_entry(name, &Sql(other))?,
                },
                Json => {
                    let text = value.as_str().map_err(S::Error::custom)?;
                    let parsed: Value = serde_json::from_str(text).map_err(S::Error::custom)?;
                    map.serialize_entry(name, &parsed)?;
                }
                IdText => {
                    let id = value.as_i64().map_err(S::Error::custom)?;
                    map.serialize_entry(name, &id.to_string())?;
                }
                Etag => {
                    let portable_id = self
                        .row
                        .get_ref(0)
                        .and_then(|v| Ok(v.as_str()?))
                        .map_err(S::Error::custom)?;
                    let version = value.as_i64().map_err(S::Error::custom)?;
                    map.serialize_entry(name, &format!("\"{portable_id}.{version}\""))?;
                }
                PersonMetadata => {
                    let mut inner = serde_json::Map::new();
                    inner.insert(
                        "person_portable_id".into(),
                        match value {
                            ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into()),
                            _ => Value::Null,
                        },
                    );
                    map.serialize_entry(name, &inner)?;
                }
            }
        }
        map.end()
    }
}

/// A column value as stored.
struct Sql<'a>(ValueRef<'a>);

impl Serialize for Sql<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ValueRef::Null => serializer.serialize_none(),
            ValueRef::Integer(n) => serializer.serialize_i64(n),
            ValueRef::Real(f) => serializer.serialize_f64(f),
            ValueRef::Text(t) => {
                serializer.serialize_str(std::str::from_utf8(t).map_err(S::Error::custom)?)
            }
            ValueRef::Blob(_) => Err(S::Error::custom("unexpected blob")),
        }
    }
}

#[derive(Serialize)]
struct Data<T> {
    data: T,
}

#[derive(Serialize)]
struct SnapshotOut<'c> {
    format: &'static str,
    scope: ScopeOut,
    exported_at: String,
    source_instance_id: String,
    records: RecordsOut<'c>,
    cursor: String,
}

#[derive(Serialize)]
struct ScopeOut {
    household_portable_id: String,
    person_portable_ids: Vec<String>,
}

#[derive(Serialize)]
struct RecordsOut<'c> {
    people: Rows<'c>,
    locations: Rows<'c>,
    medications: Rows<'c>,
    dosage_options: Rows<'c>,
    schedules: Rows<'c>,
    person_medications: Rows<'c>,
    medication_takes: Rows<'c>,
    notification_preferences: Rows<'c>,
    health_events: Rows<'c>,
    medication_pause_periods: Rows<'c>,
    dose_occurrences: Rows<'c>,
}

/// The snapshot as plain SELECTs in one read transaction, serialized into
/// one buffer.
fn ceiling_snapshot(conn: &Connection, household: i64) -> BenchResult<Vec<u8>> {
    let tx = conn.unchecked_transaction().map_err(sql)?;
    let max_seq: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE household_id = ?1",
            [household],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let household_portable_id: String = tx
        .query_row(
            "SELECT portable_id FROM households WHERE id = ?1",
            [household],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let person_portable_ids = tx
        .prepare_cached("SELECT portable_id FROM people WHERE household_id = ?1 ORDER BY id")
        .and_then(|mut s| {
            s.query_map([household], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .map_err(sql)?;
    let source_instance_id: String = tx
        .query_row(
            "SELECT value FROM instance_settings WHERE key = 'instance_id'",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let rows = |collection: &'static Collection| Rows {
        conn: &tx,
        collection,
        args: [household, 0],
    };
    let snapshot = Data {
        data: SnapshotOut {
            format: "service.portable.v2",
            scope: ScopeOut {
                household_portable_id,
                person_portable_ids,
            },
            exported_at: pillbox::domain::Timestamp::now().into_string(),
            source_instance_id,
            records: RecordsOut {
                people: rows(&PEOPLE_SQL),
                locations: rows(&LOCATIONS_SQL),
                medications: rows(&MEDICATIONS_SQL),
                dosage_options: rows(&DOSAGE_OPTIONS_SQL),
                schedules: rows(&SCHEDULES_SQL),
                person_medications: rows(&PERSON_MEDICATIONS_SQL),
                medication_takes: rows(&TAKES_SQL),
                notification_preferences: rows(&NOTIFICATION_PREFERENCES_SQL),
                health_events: rows(&HEALTH_EVENTS_SQL),
                medication_pause_periods: rows(&PAUSE_PERIODS_SQL),
                dose_occurrences: rows(&DOSE_OCCURRENCES_SQL),
            },
            cursor: pillbox::sync::changes::encode_cursor(household, max_seq),
        },
    };
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &snapshot).map_err(|e| format!("ceiling snapshot: {e}"))?;
    drop(snapshot);
    tx.commit().map_err(sql)?;
    Ok(out)
}

#[derive(Serialize)]
struct FeedOut<'c> {
    changes: Rows<'c>,
    tombstones: [(); 0],
    next_cursor: String,
    has_more: bool,
}

/// The feed entries after `after` in one SELECT, serialized into one buffer
/// in the shape of one feed page (the seeded feed has no deletions, so
/// every entry is a change).
fn ceiling_feed(conn: &Connection, household: i64, after: i64) -> BenchResult<Vec<u8>> {
    let last: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE household_id = ?1",
            [household],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let page = Data {
        data: FeedOut {
            changes: Rows {
                conn,
                collection: &FEED_SQL,
                args: [household, after],
            },
            tombstones: [],
            next_cursor: pillbox::sync::changes::encode_cursor(household, last),
            has_more: false,
        },
    };
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &page).map_err(|e| format!("ceiling feed: {e}"))?;
    Ok(out)
}

/// The rows a batch of takes writes, in one transaction: per take, the
/// source and medication looked up, the take and its feed entry inserted,
/// the stock updated and its feed entry appended; one commit.
fn ceiling_batch(
    conn: &Connection,
    (household, membership): (i64, i64),
    sources: &[Source],
    takes: &[(usize, Timestamp)],
) -> BenchResult<()> {
    // BEGIN IMMEDIATE, as the server's writer.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(sql)?;
    for (source_index, at) in takes {
        let source = &sources[*source_index];
        let lookup = if source.kind == "schedule" {
            "SELECT id, person_id, medication_id, dose_amount, dose_unit
             FROM schedules WHERE portable_id = ?1 AND household_id = ?2"
        } else {
            "SELECT id, person_id, medication_id, dose_amount, dose_unit
             FROM person_medications WHERE portable_id = ?1 AND household_id = ?2"
        };
        let (source_id, person, medication, dose, unit): (i64, i64, i64, String, String) = tx
            .prepare_cached(lookup)
            .and_then(|mut s| {
                s.query_row(params![source.portable_id, household], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
            })
            .map_err(sql)?;
        let (medication_portable_id, supply): (String, String) = tx
            .prepare_cached("SELECT portable_id, current_supply FROM medications WHERE id = ?1")
            .and_then(|mut s| s.query_row([medication], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(sql)?;
        let now = pillbox::domain::Timestamp::now();
        let take_portable_id = uuid::Uuid::now_v7().to_string();
        let client_uuid = uuid::Uuid::now_v7().to_string();
        tx.prepare_cached(
            "INSERT INTO medication_takes (portable_id, household_id, person_id, source_type,
                 source_id, client_uuid, taken_at, dose_amount, dose_unit,
                 taken_from_medication_id, recorded_by_membership_id, lock_version, created_at,
                 updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 1, ?12, ?12)",
        )
        .and_then(|mut s| {
            s.execute(params![
                take_portable_id,
                household,
                person,
                source.kind,
                source_id,
                client_uuid,
                pillbox::domain::Timestamp::from_jiff(*at),
                dose,
                unit,
                medication,
                membership,
                now,
            ])
        })
        .map_err(sql)?;
        let take_id = tx.last_insert_rowid();
        let feed = "INSERT INTO change_feed
               (household_id, record_type, record_id, record_portable_id, action, person_id,
                occurred_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
        tx.prepare_cached(feed)
            .and_then(|mut s| {
                s.execute(params![
                    household,
                    "MedicationTake",
                    take_id,
                    take_portable_id,
                    "create",
                    person,
                    now
                ])
            })
            .map_err(sql)?;
        let left = Decimal::from_str(&supply)
            .ok()
            .zip(Decimal::from_str(&dose).ok())
            .map(|(supply, dose)| (supply - dose).max(Decimal::ZERO).normalize())
            .ok_or_else(|| format!("stored decimals {supply:?} and {dose:?}"))?;
        tx.prepare_cached(
            "UPDATE medications SET current_supply = ?2, lock_version = lock_version + 1,
                 updated_at = ?3
             WHERE id = ?1",
        )
        .and_then(|mut s| s.execute(params![medication, left.to_string(), now]))
        .map_err(sql)?;
        tx.prepare_cached(feed)
            .and_then(|mut s| {
                s.execute(params![
                    household,
                    "Medication",
                    medication,
                    medication_portable_id,
                    "update",
                    None::<i64>,
                    now
                ])
            })
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

// ---------------------------------------------------------------------------
// Report

fn print_table(rows: &[Scenario]) {
    println!(
        "| Scenario | pillbox median (min) ms | raw rusqlite ceiling median (min) ms | ratio | peak memory growth | notes |"
    );
    println!("|---|--:|--:|--:|---|---|");
    for row in rows {
        let cell = |samples: &[Sample]| -> String {
            let times = times(samples);
            let min = times.iter().min().copied().unwrap_or_default();
            format!("{:.1} ({:.1})", ms(median(&times)), ms(min))
        };
        let pillbox = median(&times(&row.pillbox));
        let ceiling = median(&times(&row.ceiling));
        let ratio = if ceiling.is_zero() {
            "n/a".to_string()
        } else {
            format!("{:.1}×", pillbox.as_secs_f64() / ceiling.as_secs_f64())
        };
        let peak = |samples: &[Sample]| samples.iter().filter_map(|s| s.growth_kib).max();
        let hwm = row.pillbox.iter().filter_map(|s| s.peak_kib).max();
        let memory = match (peak(&row.pillbox), peak(&row.ceiling)) {
            _ if !row.memory => "—".into(),
            (Some(p), Some(c)) => format!(
                "pillbox +{:.1} MiB (VmHWM {:.1} MiB); ceiling +{:.1} MiB",
                mib(p),
                mib(hwm.unwrap_or(0)),
                mib(c)
            ),
            _ => "not measured (clear_refs refused)".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            row.name,
            cell(&row.pillbox),
            cell(&row.ceiling),
            ratio,
            memory,
            row.notes
        );
    }
    println!();
}

//! Load benchmark: the release-built `pillbox` binary beside a ceiling
//! server doing the same kind of work with nothing else, both driven in the
//! same run by the same in-process load generator, so that the ratios cancel
//! much of the machine's noise.
//!
//! The ceiling is a bare axum + rusqlite server (this benchmark's own binary
//! started again as a child process): reads on a read-only connection per
//! runtime thread, run in place; writes on one writer thread with WAL,
//! `synchronous=FULL` and group commit (a durable insert plus a stock update
//! per request, answered after the commit's fsync).
//!
//! | Scenario | pillbox | ceiling |
//! |---|---|---|
//! | GET one medication | getMedication | point read of one row |
//! | GET 20 medications | listMedications?per_page=20 | point read (and a 20-row list, shown) |
//! | GET today's expected doses | listDoseOccurrences (20 schedules × 2 times) | point read |
//! | POST a take, durable | createMedicationTake (fsynced before the 201) | durable insert + stock update |
//!
//! Then memory and threads: idle RSS, RSS and threads during a burst of
//! 2,000 connections, and RSS 60 s after it.
//!
//! Run with `cargo bench --bench load`. Settings (environment):
//!
//! | Variable | Default | Meaning |
//! |---|---|---|
//! | `PILLBOX_BENCH_SECONDS` | `5` | Measured seconds per scenario |
//! | `PILLBOX_BENCH_WARMUP_SECONDS` | `1` | Unmeasured warm-up before each scenario |
//! | `PILLBOX_BENCH_ROUNDS` | `5` | Turns each pillbox scenario takes in alternation with its ceiling scenario (the seconds above are split among them) |
//! | `PILLBOX_BENCH_READ_CONNECTIONS` | `32` | Connections of the read scenarios |
//! | `PILLBOX_BENCH_WRITE_CONNECTIONS` | `16,64` | Connections of the take scenarios (comma-separated) |
//! | `PILLBOX_BENCH_BURST` | `2000` | Connections of the burst (0: no burst) |
//! | `PILLBOX_BENCH_SETTLE_SECONDS` | `60` | Wait after the burst before the last RSS reading |
//! | `PILLBOX_BENCH_PIN_CPU` | unset | Serve both servers from this one CPU (`taskset -c N`); the load generator keeps to the other CPUs |
//! | `PILLBOX_BENCH_DIR` | system temp dir | Where the temporary data directories go (their file system decides fsync cost) |
//! | `PILLBOX_BENCH_BINARY` | the bench-profile build | Another `pillbox` binary to measure |
//!
//! Every client is a tokio task with its own persistent HTTP/1.1 connection;
//! every response status is checked and every request's latency recorded.
//! All traffic goes to 127.0.0.1; every loop is bounded in time; both child
//! processes are killed when their guards drop. The "server CPU/req" column
//! is the CPU time (user + system, all threads) the server used per request
//! in the measured window, read from /proc.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{
    BenchResult, HttpConn, Names, Pillbox, REQUEST_TIMEOUT, Request, STARTUP_TIMEOUT, load_average,
    memory, pinned_cpu, print_machine, stat_cpu, threads,
};

const MEDICATIONS: usize = 20;
/// Supply of the medication the takes draw from: far more than any run takes.
const LARGE_SUPPLY: &str = "100000000";
/// Requests each burst connection sends before it closes.
const BURST_REQUESTS: usize = 3;
/// The longest the burst may last, start to finish.
const BURST_LIMIT: Duration = Duration::from_secs(60);
/// Set (to a data directory) when this binary runs as the ceiling server.
const CEILING_DIR_ENV: &str = "PILLBOX_BENCH_CEILING_DIR";
const CEILING_LISTEN_ENV: &str = "PILLBOX_BENCH_CEILING_LISTEN";

fn main() {
    if let Some(dir) = std::env::var_os(CEILING_DIR_ENV) {
        let listen = std::env::var(CEILING_LISTEN_ENV).unwrap_or_default();
        if let Err(message) = ceiling::serve(Path::new(&dir), &listen) {
            eprintln!("ceiling server failed: {message}");
            std::process::exit(1);
        }
        return;
    }
    // `cargo bench` passes `--bench`; anything else (`cargo test --benches`,
    // `cargo test --all-targets`) only checks that the benchmark builds.
    if !std::env::args().any(|a| a == "--bench") {
        println!("load benchmark: skipped (run it with `cargo bench --bench load`)");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(message) = runtime.block_on(run()) {
        eprintln!("load benchmark failed: {message}");
        std::process::exit(1);
    }
}

struct Settings {
    measure: Duration,
    warmup: Duration,
    /// Turns each scenario is split into, alternating with its ceiling's
    /// (see `drive_in_turns`).
    rounds: usize,
    read_connections: usize,
    write_connections: Vec<usize>,
    burst: usize,
    settle: Duration,
    base_dir: Option<PathBuf>,
}

impl Settings {
    fn from_env() -> BenchResult<Settings> {
        let seconds = |name: &str, default: f64| -> BenchResult<Duration> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 3600.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| format!("{name}={v:?} is not a number of seconds (0..3600)")),
                Err(_) => Ok(Duration::from_secs_f64(default)),
            }
        };
        let counts = |name: &str, default: &str, min: usize, max: usize| {
            let v = std::env::var(name).unwrap_or_else(|_| default.to_string());
            v.split(',')
                .map(|c| {
                    c.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (min..=max).contains(n))
                        .ok_or_else(|| format!("{name}={v:?}: each entry must be {min}..{max}"))
                })
                .collect::<BenchResult<Vec<_>>>()
        };
        let measure = seconds("PILLBOX_BENCH_SECONDS", 5.0)?;
        if measure.is_zero() {
            return Err("PILLBOX_BENCH_SECONDS must be above 0".into());
        }
        Ok(Settings {
            measure,
            warmup: seconds("PILLBOX_BENCH_WARMUP_SECONDS", 1.0)?,
            rounds: counts("PILLBOX_BENCH_ROUNDS", "5", 1, 100)?[0],
            read_connections: counts("PILLBOX_BENCH_READ_CONNECTIONS", "32", 1, 1024)?[0],
            write_connections: counts("PILLBOX_BENCH_WRITE_CONNECTIONS", "16,64", 1, 1024)?,
            burst: counts("PILLBOX_BENCH_BURST", "2000", 0, 10_000)?[0],
            settle: seconds("PILLBOX_BENCH_SETTLE_SECONDS", 60.0)?,
            base_dir: std::env::var_os("PILLBOX_BENCH_DIR").map(PathBuf::from),
        })
    }

    fn temp_dir(&self, prefix: &str) -> BenchResult<tempfile::TempDir> {
        match &self.base_dir {
            Some(dir) => tempfile::Builder::new().prefix(prefix).tempdir_in(dir),
            None => tempfile::Builder::new().prefix(prefix).tempdir(),
        }
        .map_err(|e| format!("cannot create a temporary data directory: {e}"))
    }
}

async fn run() -> BenchResult<()> {
    let settings = Settings::from_env()?;
    let data = settings.temp_dir("pillbox-bench")?;
    let ceiling_data = settings.temp_dir("pillbox-bench-ceiling")?;
    let pinned = pinned_cpu()?;
    print_machine(data.path());
    if let Some(cpu) = pinned {
        keep_off_cpu(cpu)?;
    }
    println!(
        "settings: {:.1} s measured after {:.1} s warm-up per scenario; reads at {} connections, takes at {:?}; each pillbox scenario in {} turns alternating with its ceiling's; burst of {} connections, RSS read {:.0} s after it; servers {}",
        settings.measure.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        settings.read_connections,
        settings.write_connections,
        settings.rounds,
        settings.burst,
        settings.settle.as_secs_f64(),
        match pinned {
            Some(cpu) => format!("pinned to CPU {cpu} (load generator on the others)"),
            None => "unpinned".into(),
        }
    );

    let names = Names {
        household: "Load benchmark",
        token: "load benchmark",
    };
    let (server, household, token) = Pillbox::start(data.path(), names).await?;
    let pid = server.child.id().to_string();
    let started_rss = rss_mb(&pid);
    let fixture = Fixture::create(&server, household, token).await?;
    let ceiling = CeilingProcess::start(ceiling_data.path(), pinned)?;
    println!(
        "pillbox {} on {} (pid {}), ceiling on {} (pid {})",
        server.binary.display(),
        server.addr,
        server.child.id(),
        ceiling.addr,
        ceiling.child.id()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = Sample::of(&pid);
    let ceiling_idle = Sample::of(&ceiling.child.id().to_string());
    println!();

    let pillbox = Target {
        addr: server.addr,
        pid: server.child.id(),
    };
    let bare = Target {
        addr: ceiling.addr,
        pid: ceiling.child.id(),
    };
    let reads = settings.read_connections;
    let h = fixture.household;
    let get = |path: String, token: Option<String>| Arc::new(Workload::Get { path, token });
    let token = Some(fixture.token.clone());

    let mut rows = Vec::new();
    let list = drive(&bare, reads, &settings, get("/items?limit=20".into(), None)).await;
    rows.push(Row::new("ceiling: 20-row list", reads, &list, None));
    let scenarios = [
        (
            "GET one medication",
            format!("/api/v1/households/{h}/medications/{}", fixture.medication),
        ),
        (
            "GET 20 medications",
            format!("/api/v1/households/{h}/medications?per_page=20"),
        ),
        (
            "GET today's expected doses (40)",
            format!("/api/v1/households/{h}/dose_occurrences"),
        ),
    ];
    for (scenario, path) in scenarios {
        let (point, run) = drive_in_turns(
            (&bare, get("/items/1".into(), None)),
            (&pillbox, get(path, token.clone())),
            reads,
            &settings,
        )
        .await;
        rows.push(Row::new("ceiling: point read", reads, &point, None));
        rows.push(Row::new(scenario, reads, &run, Some(&point)));
    }

    let mut takes_acknowledged = 0u64;
    let mut ceiling_takes = 0u64;
    for &clients in &settings.write_connections {
        let take = Arc::new(Workload::Take {
            path: format!("/api/v1/households/{h}/medication_takes"),
            token: fixture.token.clone(),
            schedule: fixture.schedule,
        });
        let (durable, run) = drive_in_turns(
            (&bare, Arc::new(Workload::CeilingTake)),
            (&pillbox, take),
            clients,
            &settings,
        )
        .await;
        ceiling_takes += durable.successes_including_warmup;
        rows.push(Row::new("ceiling: durable insert", clients, &durable, None));
        takes_acknowledged += run.successes_including_warmup;
        rows.push(Row::new(
            "POST a take, durable",
            clients,
            &run,
            Some(&durable),
        ));
    }
    let loaded = Sample::of(&pid);

    print_table(&rows);
    for row in &rows {
        if let Some(sample) = &row.first_error {
            println!("first error in {} x{}: {sample}", row.scenario, row.clients);
        }
    }

    // Every acknowledged take must be in the stock, exactly once.
    let supply = fixture.current_supply(&server).await?;
    let expected = LARGE_SUPPLY.parse::<f64>().unwrap_or(f64::NAN) - takes_acknowledged as f64;
    let stock_ok = (supply - expected).abs() < 1e-6;
    println!(
        "stock check: {takes_acknowledged} takes acknowledged, current_supply {supply} (expected {expected}): {}",
        if stock_ok { "ok" } else { "MISMATCH" }
    );
    let ceiling_ok = ceiling.takes_recorded(ceiling_data.path())? == ceiling_takes;
    println!(
        "ceiling check: {ceiling_takes} durable inserts acknowledged and recorded: {}",
        if ceiling_ok { "ok" } else { "MISMATCH" }
    );
    println!();

    let burst = if settings.burst > 0 {
        Some(burst(&server, &fixture, &settings).await)
    } else {
        None
    };

    println!("| memory and threads (pillbox) | RSS MB | threads |");
    println!("|---|--:|--:|");
    println!("| just started | {} | |", fmt_mb(started_rss));
    println!(
        "| idle | {} | {} |",
        fmt_mb(idle.rss_mb),
        fmt_n(idle.threads)
    );
    println!(
        "| after the scenarios | {} | {} |",
        fmt_mb(loaded.rss_mb),
        fmt_n(loaded.threads)
    );
    if let Some(b) = &burst {
        println!(
            "| during a {}-connection burst (peak) | {} | {} |",
            settings.burst,
            fmt_mb(b.peak.rss_mb),
            fmt_n(b.peak.threads)
        );
        println!(
            "| {:.0} s after the burst | {} | {} |",
            settings.settle.as_secs_f64(),
            fmt_mb(b.after.rss_mb),
            fmt_n(b.after.threads)
        );
    }
    println!(
        "| ceiling idle (for comparison) | {} | {} |",
        fmt_mb(ceiling_idle.rss_mb),
        fmt_n(ceiling_idle.threads)
    );
    if let Some(b) = &burst {
        println!(
            "burst: {} requests answered, {} errors ({}) in {:.1} s",
            b.answered,
            b.errors,
            b.first_error.as_deref().unwrap_or("none"),
            b.took.as_secs_f64()
        );
    }
    println!("load average after the run: {}", load_average());

    drop(ceiling);
    drop(server);
    drop(data);
    drop(ceiling_data);
    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 || !stock_ok || !ceiling_ok {
        return Err(format!(
            "{errors} request errors{}{}",
            if stock_ok { "" } else { ", a stock mismatch" },
            if ceiling_ok {
                ""
            } else {
                ", a ceiling mismatch"
            }
        ));
    }
    Ok(())
}

/// Keeps this process (the load generator) off `cpu`, where the servers run.
fn keep_off_cpu(cpu: usize) -> BenchResult<()> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return Err("PILLBOX_BENCH_PIN_CPU needs at least two CPUs".into());
    }
    let others: Vec<String> = (0..cpus)
        .filter(|c| *c != cpu)
        .map(|c| c.to_string())
        .collect();
    // Every thread of this process, the runtime's included.
    for task in std::fs::read_dir("/proc/self/task").map_err(|e| e.to_string())? {
        let tid = task.map_err(|e| e.to_string())?.file_name();
        let status = Command::new("taskset")
            .arg("-p")
            .arg("-c")
            .arg(others.join(","))
            .arg(&tid)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("taskset: {e}"))?;
        if !status.success() {
            return Err(format!("taskset could not move thread {tid:?}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Memory and threads

#[derive(Clone, Copy, Default)]
struct Sample {
    rss_mb: Option<f64>,
    threads: Option<u64>,
}

impl Sample {
    fn of(pid: &str) -> Sample {
        Sample {
            rss_mb: rss_mb(pid),
            threads: threads(pid),
        }
    }
}

fn rss_mb(pid: &str) -> Option<f64> {
    memory(pid).map(|m| m.rss_kib as f64 / 1024.0)
}

fn fmt_mb(mb: Option<f64>) -> String {
    mb.map_or_else(|| "n/a".into(), |mb| format!("{mb:.1}"))
}

fn fmt_n(n: Option<u64>) -> String {
    n.map_or_else(|| "n/a".into(), |n| n.to_string())
}

struct Burst {
    peak: Sample,
    after: Sample,
    answered: u64,
    errors: u64,
    first_error: Option<String>,
    took: Duration,
}

/// `settings.burst` connections at once, each sending a few reads, while
/// RSS and threads are sampled; then the settle wait and a last sample.
async fn burst(server: &Pillbox, fixture: &Fixture, settings: &Settings) -> Burst {
    let pid = server.child.id().to_string();
    let started = Instant::now();
    let deadline = started + BURST_LIMIT;
    let request = Arc::new(Request::get(
        &format!(
            "/api/v1/households/{}/medications/{}",
            fixture.household, fixture.medication
        ),
        Some(&fixture.token),
    ));
    let addr = server.addr;
    let tasks: Vec<_> = (0..settings.burst)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut answered = 0u64;
                let work = async {
                    let mut conn = HttpConn::connect(addr)
                        .await
                        .map_err(|e| format!("connect: {e}"))?;
                    for _ in 0..BURST_REQUESTS {
                        let response = conn.send(&request).await?;
                        if response.status != 200 {
                            return Err(format!("status {}", response.status));
                        }
                        answered += 1;
                    }
                    Ok(())
                };
                let outcome = tokio::time::timeout_at(deadline.into(), work)
                    .await
                    .unwrap_or_else(|_| Err("unfinished when the burst ended".into()));
                (answered, outcome.err())
            })
        })
        .collect();
    let mut peak = Sample::default();
    let mut pending = tasks;
    let mut answered = 0u64;
    let mut errors = 0u64;
    let mut first_error = None;
    while !pending.is_empty() {
        let now = Sample::of(&pid);
        peak.rss_mb = max_opt(peak.rss_mb, now.rss_mb);
        peak.threads = max_opt(peak.threads, now.threads);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut still = Vec::with_capacity(pending.len());
        for task in pending {
            if task.is_finished() {
                match task.await {
                    Ok((n, error)) => {
                        answered += n;
                        if let Some(e) = error {
                            errors += 1;
                            first_error.get_or_insert(e);
                        }
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e.to_string());
                    }
                }
            } else {
                still.push(task);
            }
        }
        pending = still;
    }
    let took = started.elapsed();
    tokio::time::sleep(settings.settle).await;
    Burst {
        peak,
        after: Sample::of(&pid),
        answered,
        errors,
        first_error,
        took,
    }
}

fn max_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (a, b) => a.or(b),
    }
}

// ---------------------------------------------------------------------------
// The fixture

/// The household, its medications and schedules and the token the workloads use.
struct Fixture {
    household: i64,
    token: String,
    /// The medication every take draws from (the large supply).
    medication: i64,
    /// A daily schedule of that medication.
    schedule: i64,
}

impl Fixture {
    /// 20 medications and, for the owner's own person, 20 daily schedules
    /// (one per medication) at 08:00 and 20:00: 40 expected doses a day.
    async fn create(server: &Pillbox, household: i64, token: String) -> BenchResult<Fixture> {
        let mut conn = HttpConn::connect_within(server.addr).await?;
        let base = format!("/api/v1/households/{household}");
        let person = {
            let response = conn
                .send_within(&Request::get(&format!("{base}/people"), Some(&token)))
                .await?;
            let listed: Value = serde_json::from_slice(&response.body)
                .map_err(|e| format!("listPeople body: {e}"))?;
            listed["data"][0]["id"]
                .as_i64()
                .ok_or("listPeople found no person for the owner")?
        };
        let mut post = async |what: &str, path: String, body: Value| -> BenchResult<i64> {
            let response = conn
                .send_within(&Request::post(&path, &token, &body))
                .await
                .map_err(|e| format!("{what}: {e}"))?;
            if response.status != 201 {
                return Err(format!(
                    "{what} answered {}: {}",
                    response.status,
                    response.body_text()
                ));
            }
            let created: Value =
                serde_json::from_slice(&response.body).map_err(|e| format!("{what} body: {e}"))?;
            created["data"]["id"]
                .as_i64()
                .ok_or_else(|| format!("{what} returned no id"))
        };
        let mut medications = Vec::with_capacity(MEDICATIONS);
        for i in 0..MEDICATIONS {
            let supply = if i == 0 { LARGE_SUPPLY } else { "60" };
            let body = json!({"medication": {
                "name": format!("Benchmark medication {i:02} 500mg tablets"),
                "friendly_name": format!("Medication {i:02}"),
                "category": "benchmark",
                "dose_amount": "1",
                "dose_unit": "tablet",
                "current_supply": supply,
                "reorder_threshold": "10",
            }});
            medications.push(post("createMedication", format!("{base}/medications"), body).await?);
        }
        let start_date = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24))
            .strftime("%Y-%m-%d")
            .to_string();
        let mut schedules = Vec::with_capacity(MEDICATIONS);
        for medication in &medications {
            let body = json!({"schedule": {
                "person_id": person, "medication_id": medication,
                "schedule_type": "daily", "schedule_config": {"times": ["08:00", "20:00"]},
                "start_date": start_date,
            }});
            schedules.push(post("createSchedule", format!("{base}/schedules"), body).await?);
        }
        Ok(Fixture {
            household,
            token,
            medication: medications[0],
            schedule: schedules[0],
        })
    }

    async fn current_supply(&self, server: &Pillbox) -> BenchResult<f64> {
        let mut conn = HttpConn::connect_within(server.addr).await?;
        let path = format!(
            "/api/v1/households/{}/medications/{}",
            self.household, self.medication
        );
        let response = conn
            .send_within(&Request::get(&path, Some(&self.token)))
            .await
            .map_err(|e| format!("getMedication: {e}"))?;
        if response.status != 200 {
            return Err(format!(
                "getMedication answered {}: {}",
                response.status,
                response.body_text()
            ));
        }
        let body: Value = serde_json::from_slice(&response.body)
            .map_err(|e| format!("getMedication body: {e}"))?;
        body["data"]["current_supply"]
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| format!("getMedication has no current_supply: {body}"))
    }
}

// ---------------------------------------------------------------------------
// The ceiling server, as a child process

struct CeilingProcess {
    child: Child,
    addr: SocketAddr,
}

impl Drop for CeilingProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl CeilingProcess {
    fn start(dir: &Path, pinned: Option<usize>) -> BenchResult<CeilingProcess> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let addr = common::free_local_addr()?;
        let mut command = match pinned {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let child = command
            .env(CEILING_DIR_ENV, dir)
            .env(CEILING_LISTEN_ENV, addr.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the ceiling server: {e}"))?;
        let mut process = CeilingProcess { child, addr };
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = process.child.try_wait() {
                return Err(format!("the ceiling server exited early ({status})"));
            }
            if std::net::TcpStream::connect(addr).is_ok() {
                return Ok(process);
            }
            if Instant::now() >= deadline {
                return Err("the ceiling server did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn takes_recorded(&self, dir: &Path) -> BenchResult<u64> {
        let conn =
            rusqlite::Connection::open(dir.join(ceiling::DATABASE)).map_err(|e| e.to_string())?;
        conn.query_row("SELECT count(*) FROM takes", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| e.to_string())
    }
}

mod ceiling {
    //! The bare server: axum routes over rusqlite with nothing else.

    use std::cell::RefCell;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use axum::Json;
    use axum::extract::{Path as UrlPath, Query};
    use axum::http::StatusCode;
    use axum::routing::{get, post};
    use rusqlite::{Connection, OpenFlags, OptionalExtension};
    use serde_json::{Value, json};
    use tokio::sync::{mpsc, oneshot};

    pub const DATABASE: &str = "ceiling.sqlite3";
    const MAX_GROUP: usize = 128;

    static PATH: OnceLock<PathBuf> = OnceLock::new();

    thread_local! {
        static READER: RefCell<Option<Connection>> = const { RefCell::new(None) };
    }

    /// Runs `f` on this runtime thread's read-only connection.
    fn read<T>(f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        READER.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                let path = PATH.get().expect("database path");
                *slot = Some(Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?);
            }
            f(slot.as_ref().expect("connection"))
        })
    }

    const COLUMNS: &str = "id, name, friendly_name, category, dose_amount, dose_unit, current_supply, reorder_threshold, created_at, updated_at";

    fn item(r: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
        Ok(json!({
            "id": r.get::<_, i64>(0)?,
            "name": r.get::<_, String>(1)?,
            "friendly_name": r.get::<_, String>(2)?,
            "category": r.get::<_, String>(3)?,
            "dose_amount": r.get::<_, String>(4)?,
            "dose_unit": r.get::<_, String>(5)?,
            "current_supply": r.get::<_, String>(6)?,
            "reorder_threshold": r.get::<_, String>(7)?,
            "created_at": r.get::<_, String>(8)?,
            "updated_at": r.get::<_, String>(9)?,
        }))
    }

    type Job = (String, oneshot::Sender<rusqlite::Result<i64>>);

    pub fn serve(dir: &Path, listen: &str) -> Result<(), String> {
        let path = dir.join(DATABASE);
        let mut conn = Connection::open(&path).map_err(|e| e.to_string())?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, friendly_name TEXT NOT NULL,
                 category TEXT NOT NULL, dose_amount TEXT NOT NULL, dose_unit TEXT NOT NULL,
                 current_supply TEXT NOT NULL, reorder_threshold TEXT NOT NULL,
                 created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
             CREATE TABLE takes (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
                 client_uuid TEXT NOT NULL UNIQUE, taken_at TEXT NOT NULL);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
             INSERT INTO items ({COLUMNS})
             SELECT i, 'Benchmark medication ' || i || ' 500mg tablets', 'Medication ' || i, 'benchmark',
                    '1', 'tablet', '100000000', '10', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z' FROM n;"
        ))
        .map_err(|e| e.to_string())?;
        PATH.set(path).map_err(|_| "path set twice")?;
        let (jobs, mut queue) = mpsc::channel::<Job>(1024);
        std::thread::Builder::new()
            .name("ceiling-writer".into())
            .spawn(move || {
                let mut group = Vec::with_capacity(MAX_GROUP);
                while let Some(job) = queue.blocking_recv() {
                    group.push(job);
                    while group.len() < MAX_GROUP {
                        match queue.try_recv() {
                            Ok(job) => group.push(job),
                            Err(_) => break,
                        }
                    }
                    let tx = match conn
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    {
                        Ok(tx) => tx,
                        Err(_) => {
                            group.clear();
                            continue;
                        }
                    };
                    let mut results = Vec::with_capacity(group.len());
                    for (uuid, reply) in group.drain(..) {
                        let result = (|| {
                            tx.prepare_cached(
                                "INSERT INTO takes (item_id, client_uuid, taken_at) VALUES (1, ?1, strftime('%Y-%m-%dT%H:%M:%SZ'))",
                            )?
                            .execute([&uuid])?;
                            let id = tx.last_insert_rowid();
                            tx.prepare_cached(
                                "UPDATE items SET current_supply = CAST(current_supply AS INTEGER) - 1 WHERE id = 1",
                            )?
                            .execute([])?;
                            Ok(id)
                        })();
                        results.push((reply, result));
                    }
                    let committed = tx.commit();
                    for (reply, result) in results {
                        let _ = reply.send(match &committed {
                            Ok(()) => result,
                            Err(_) => Err(rusqlite::Error::InvalidQuery),
                        });
                    }
                }
            })
            .map_err(|e| e.to_string())?;

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| e.to_string())?;
            let app = axum::Router::new()
                .route("/items/{id}", get(one))
                .route("/items", get(list))
                .route("/takes", post(take))
                .with_state(jobs);
            axum::serve(listener, app).await.map_err(|e| e.to_string())
        })
    }

    async fn one(UrlPath(id): UrlPath<i64>) -> Result<Json<Value>, StatusCode> {
        let found = read(|c| {
            c.prepare_cached(&format!("SELECT {COLUMNS} FROM items WHERE id = ?1"))?
                .query_row([id], item)
                .optional()
        })
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        match found {
            Some(item) => Ok(Json(json!({"data": item}))),
            None => Err(StatusCode::NOT_FOUND),
        }
    }

    #[derive(serde::Deserialize)]
    struct Limit {
        limit: i64,
    }

    async fn list(Query(q): Query<Limit>) -> Result<Json<Value>, StatusCode> {
        let items = read(|c| {
            c.prepare_cached(&format!("SELECT {COLUMNS} FROM items ORDER BY id LIMIT ?1"))?
                .query_map([q.limit], item)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        Ok(Json(json!({"data": items})))
    }

    async fn take(
        axum::extract::State(jobs): axum::extract::State<mpsc::Sender<Job>>,
        Json(body): Json<Value>,
    ) -> Result<(StatusCode, Json<Value>), StatusCode> {
        let uuid = body["take"]["client_uuid"]
            .as_str()
            .ok_or(StatusCode::UNPROCESSABLE_ENTITY)?
            .to_string();
        let (reply, answer) = oneshot::channel();
        jobs.send((uuid.clone(), reply))
            .await
            .map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
        let id = answer
            .await
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        Ok((
            StatusCode::CREATED,
            Json(json!({"data": {"id": id, "client_uuid": uuid}})),
        ))
    }
}

// ---------------------------------------------------------------------------
// Load generation

/// A server to drive and the process whose CPU time it spends.
struct Target {
    addr: SocketAddr,
    pid: u32,
}

enum Workload {
    Get {
        path: String,
        token: Option<String>,
    },
    Take {
        path: String,
        token: String,
        schedule: i64,
    },
    CeilingTake,
}

impl Workload {
    fn request(&self) -> Request {
        // A new client_uuid each time: each request is a new take.
        let uuid = || uuid::Uuid::new_v4().to_string();
        match self {
            Workload::Get { path, token } => Request::get(path, token.as_deref()),
            Workload::Take {
                path,
                token,
                schedule,
            } => {
                let body = json!({"medication_take": {
                    "source_type": "schedule",
                    "source_id": schedule,
                    "taken_at": jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or(jiff::Timestamp::now()).to_string(),
                    "client_uuid": uuid(),
                }});
                Request::post(path, token, &body)
            }
            Workload::CeilingTake => {
                Request::post("/takes", "none", &json!({"take": {"client_uuid": uuid()}}))
            }
        }
    }

    fn expected_status(&self) -> u16 {
        match self {
            Workload::Get { .. } => 200,
            Workload::Take { .. } | Workload::CeilingTake => 201,
        }
    }
}

/// What one scenario measured.
struct RunStats {
    measured: Duration,
    /// Latencies (microseconds) of the requests completed inside the window.
    latencies_us: Vec<u64>,
    errors: u64,
    successes_including_warmup: u64,
    first_error: Option<String>,
    /// CPU time (user + system, all threads) the server used in the window.
    server_cpu: Option<Duration>,
}

impl RunStats {
    /// Adds another turn of the same scenario (latencies left unsorted).
    fn absorb(&mut self, turn: RunStats) {
        self.measured += turn.measured;
        self.latencies_us.extend(turn.latencies_us);
        self.errors += turn.errors;
        self.successes_including_warmup += turn.successes_including_warmup;
        self.first_error = self.first_error.take().or(turn.first_error);
        self.server_cpu = self.server_cpu.zip(turn.server_cpu).map(|(a, b)| a + b);
    }

    fn requests_per_second(&self) -> f64 {
        self.latencies_us.len() as f64 / self.measured.as_secs_f64()
    }

    /// Server CPU time per request completed in the window, in microseconds.
    fn cpu_us_per_request(&self) -> Option<f64> {
        let cpu = self.server_cpu?;
        (!self.latencies_us.is_empty())
            .then(|| cpu.as_secs_f64() * 1e6 / self.latencies_us.len() as f64)
    }

    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.latencies_us.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.latencies_us.len()) - 1;
        self.latencies_us[index] as f64 / 1000.0
    }
}

/// What one client saw.
#[derive(Default)]
struct ClientStats {
    latencies_us: Vec<u64>,
    errors: u64,
    successes: u64,
    first_error: Option<String>,
}

impl ClientStats {
    /// Counts an error when `measured` (warm-up errors are only shown).
    fn error(&mut self, measured: bool, what: impl FnOnce() -> String) {
        if measured {
            self.errors += 1;
        }
        if self.first_error.is_none() {
            self.first_error = Some(what());
        }
    }
}

/// `clients` concurrent keep-alive clients against `target` for warm-up + measure.
async fn drive(
    target: &Target,
    clients: usize,
    settings: &Settings,
    workload: Arc<Workload>,
) -> RunStats {
    drive_for(target, clients, workload, settings.warmup, settings.measure).await
}

/// The ceiling's and pillbox's turns, `settings.rounds` of each in
/// alternation, each a `rounds`-th of the warm-up and of the measured
/// time: a slow spell of a shared host then falls on both alike instead
/// of on whichever ran during it. The stats of each side's turns are
/// added up.
async fn drive_in_turns(
    first: (&Target, Arc<Workload>),
    second: (&Target, Arc<Workload>),
    clients: usize,
    settings: &Settings,
) -> (RunStats, RunStats) {
    let rounds = settings.rounds.max(1) as u32;
    let (warmup, measure) = (settings.warmup / rounds, settings.measure / rounds);
    let mut totals: (Option<RunStats>, Option<RunStats>) = (None, None);
    for _ in 0..rounds {
        for (side, (target, workload)) in [(&mut totals.0, &first), (&mut totals.1, &second)] {
            let turn = drive_for(target, clients, workload.clone(), warmup, measure).await;
            match side {
                Some(total) => total.absorb(turn),
                None => *side = Some(turn),
            }
        }
    }
    let finish = |stats: Option<RunStats>| {
        let mut stats = stats.expect("at least one round");
        stats.latencies_us.sort_unstable();
        stats
    };
    (finish(totals.0), finish(totals.1))
}

async fn drive_for(
    target: &Target,
    clients: usize,
    workload: Arc<Workload>,
    warmup: Duration,
    measure: Duration,
) -> RunStats {
    let start = Instant::now();
    let window_start = start + warmup;
    let end = window_start + measure;
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let workload = workload.clone();
            tokio::spawn(client(target.addr, workload, window_start, end))
        })
        .collect();
    let stat = format!("/proc/{}/stat", target.pid);
    tokio::time::sleep_until(window_start.into()).await;
    let cpu_before = stat_cpu(&stat);
    tokio::time::sleep_until(end.into()).await;
    let cpu_after = stat_cpu(&stat);
    let mut stats = RunStats {
        measured: measure,
        latencies_us: Vec::new(),
        errors: 0,
        successes_including_warmup: 0,
        first_error: None,
        server_cpu: cpu_before
            .zip(cpu_after)
            .map(|(before, after)| after.saturating_sub(before)),
    };
    for task in tasks {
        match task.await {
            Ok(client) => {
                stats.latencies_us.extend(client.latencies_us);
                stats.errors += client.errors;
                stats.successes_including_warmup += client.successes;
                if stats.first_error.is_none() {
                    stats.first_error = client.first_error;
                }
            }
            Err(e) => {
                stats.errors += 1;
                stats
                    .first_error
                    .get_or_insert_with(|| format!("client task failed: {e}"));
            }
        }
    }
    stats.latencies_us.sort_unstable();
    stats
}

/// One client: sends requests back to back on one connection until `end`,
/// reconnecting only after an error or when the server closes.
async fn client(
    addr: SocketAddr,
    workload: Arc<Workload>,
    window_start: Instant,
    end: Instant,
) -> ClientStats {
    let mut stats = ClientStats::default();
    let expected = workload.expected_status();
    let mut conn: Option<HttpConn> = None;
    while Instant::now() < end {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match tokio::time::timeout(REQUEST_TIMEOUT, HttpConn::connect(addr)).await {
                Ok(Ok(c)) => conn.insert(c),
                Ok(Err(e)) => {
                    stats.error(Instant::now() >= window_start, || format!("connect: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(_) => {
                    stats.error(Instant::now() >= window_start, || {
                        "connect timed out".into()
                    });
                    continue;
                }
            },
        };
        let request = workload.request();
        let sent = Instant::now();
        let outcome = tokio::time::timeout(REQUEST_TIMEOUT, c.send(&request)).await;
        let done = Instant::now();
        let in_window = sent >= window_start && done <= end;
        match outcome {
            Ok(Ok(response)) => {
                if in_window {
                    stats
                        .latencies_us
                        .push(done.duration_since(sent).as_micros() as u64);
                }
                // A take answered after the window closed still counts for
                // the stock check.
                if response.status == expected {
                    stats.successes += 1;
                } else {
                    stats.error(sent >= window_start, || {
                        format!("status {}: {}", response.status, response.body_text())
                    });
                }
                if response.close {
                    conn = None;
                }
            }
            Ok(Err(e)) => {
                stats.error(sent >= window_start, || e);
                conn = None;
            }
            Err(_) => {
                stats.error(sent >= window_start, || {
                    format!("no response within {REQUEST_TIMEOUT:?}")
                });
                conn = None;
            }
        }
    }
    stats
}

// ---------------------------------------------------------------------------
// Report

struct Row {
    scenario: &'static str,
    clients: usize,
    rps: f64,
    p50: f64,
    p99: f64,
    errors: u64,
    ratio: Option<f64>,
    /// The ceiling's server CPU per request over this scenario's.
    cpu_ratio: Option<f64>,
    cpu_us: Option<f64>,
    first_error: Option<String>,
}

impl Row {
    /// `ceiling`: what the ratios are taken against (none for a ceiling row).
    fn new(
        scenario: &'static str,
        clients: usize,
        stats: &RunStats,
        ceiling: Option<&RunStats>,
    ) -> Row {
        let rps = stats.requests_per_second();
        let ceiling_rps = ceiling.map(RunStats::requests_per_second);
        let cpu_ratio = ceiling
            .and_then(RunStats::cpu_us_per_request)
            .zip(stats.cpu_us_per_request())
            .map(|(c, p)| if p > 0.0 { c / p } else { f64::NAN });
        Row {
            scenario,
            clients,
            rps,
            p50: stats.percentile_ms(50.0),
            p99: stats.percentile_ms(99.0),
            errors: stats.errors,
            ratio: ceiling_rps.map(|c| if c > 0.0 { rps / c } else { f64::NAN }),
            cpu_ratio,
            cpu_us: stats.cpu_us_per_request(),
            first_error: stats.first_error.clone(),
        }
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "| {:<32} | {:>5} | {:>10} | {:>7} | {:>7} | {:>6} | {:>10} | {:>14} | {:>9} |",
        "scenario",
        "conns",
        "requests/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "ratio",
        "server CPU/req",
        "CPU ratio"
    );
    println!(
        "|{:-<34}|{:->7}|{:->12}|{:->9}|{:->9}|{:->8}|{:->12}|{:->16}|{:->11}|",
        "", ":", ":", ":", ":", ":", ":", ":", ":"
    );
    for row in rows {
        let cpu = row
            .cpu_us
            .map_or_else(|| "n/a".to_string(), |us| format!("{us:.0} µs"));
        let ratio = |r: Option<f64>| r.map_or_else(|| "—".to_string(), |r| format!("{r:.2}"));
        println!(
            "| {:<32} | {:>5} | {:>10.0} | {:>7.2} | {:>7.2} | {:>6} | {:>10} | {:>14} | {:>9} |",
            row.scenario,
            row.clients,
            row.rps,
            row.p50,
            row.p99,
            row.errors,
            ratio(row.ratio),
            cpu,
            ratio(row.cpu_ratio)
        );
    }
    println!();
    println!(
        "ratio: requests/s against the ceiling's (reads: its point read; takes: its durable insert at the same connections); CPU ratio: the ceiling's server CPU per request over this one's (less sensitive to other load on the machine)"
    );
    println!();
}

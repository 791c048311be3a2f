//! Load benchmark: starts the release-built `pillbox` binary on a fresh data
//! directory and drives two endpoints with concurrent keep-alive clients:
//!
//! - `GET /api/v1/households/{id}/medications?per_page=20` (listMedications, a read),
//! - `POST /api/v1/households/{id}/medications/{id}/stock_removals`
//!   (createStockRemoval, a durable write: fsynced before the 201),
//!
//! and, in the same run, a minimal axum route served in-process on its own
//! runtime (the ceiling: what this HTTP stack and this load generator reach
//! on this machine with no application work at all).
//!
//! Run with `cargo bench --bench load`. Settings (environment):
//!
//! | Variable | Default | Meaning |
//! |---|---|---|
//! | `PILLBOX_BENCH_SECONDS` | `5` | Measured seconds per scenario |
//! | `PILLBOX_BENCH_WARMUP_SECONDS` | `1` | Unmeasured warm-up before each scenario |
//! | `PILLBOX_BENCH_CONCURRENCY` | `8,32` | Concurrent clients (comma-separated list) |
//! | `PILLBOX_BENCH_DIR` | system temp dir | Where the temporary data directory goes (its file system decides fsync cost) |
//! | `PILLBOX_BENCH_BINARY` | the bench-profile build | Another `pillbox` binary to measure (e.g. a static build) |
//!
//! Every client is a tokio task with its own persistent HTTP/1.1 connection;
//! every response status is checked and every request's latency recorded.
//! All traffic goes to 127.0.0.1; every loop and request is bounded in time;
//! the server child process is killed when the guard holding it drops. The
//! server logs each request as it does in production (`RUST_LOG` is passed
//! through) to `serve.log` in the temporary data directory. The table's last
//! column is the CPU time (user + system, all threads) the server used per
//! request in the measured window, read from /proc.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{
    BenchResult, HttpConn, Names, Pillbox, REQUEST_TIMEOUT, Request, STARTUP_TIMEOUT, load_average,
    print_machine, stat_cpu,
};

const MEDICATIONS: usize = 20;
/// Supply of the medication the removals draw from: far more than any run takes.
const LARGE_SUPPLY: &str = "100000000";
const REMOVAL_QUANTITY: &str = "0.25";

fn main() {
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
    concurrency: Vec<usize>,
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
        let concurrency = match std::env::var("PILLBOX_BENCH_CONCURRENCY") {
            Ok(v) => v
                .split(',')
                .map(|c| {
                    c.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=1024).contains(n))
                        .ok_or_else(|| {
                            format!("PILLBOX_BENCH_CONCURRENCY={v:?}: each entry must be 1..1024")
                        })
                })
                .collect::<BenchResult<Vec<_>>>()?,
            Err(_) => vec![8, 32],
        };
        let measure = seconds("PILLBOX_BENCH_SECONDS", 5.0)?;
        if measure.is_zero() {
            return Err("PILLBOX_BENCH_SECONDS must be above 0".into());
        }
        Ok(Settings {
            measure,
            warmup: seconds("PILLBOX_BENCH_WARMUP_SECONDS", 1.0)?,
            concurrency,
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
        "settings: {:.1} s measured after {:.1} s warm-up per scenario, concurrency {:?}",
        settings.measure.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        settings.concurrency
    );

    let names = Names {
        household: "Load benchmark",
        token: "load benchmark",
    };
    let (server, household, token) = Pillbox::start(data.path(), names).await?;
    let fixture = Fixture::create(&server, household, token).await?;
    let ceiling = Ceiling::start()?;
    println!(
        "pillbox {} on {} (pid {}), ceiling on {}",
        server.binary.display(),
        server.addr,
        server.child.id(),
        ceiling.addr
    );
    println!();

    let list_path = format!(
        "/api/v1/households/{}/medications?per_page=20",
        fixture.household
    );
    let removal_path = format!(
        "/api/v1/households/{}/medications/{}/stock_removals",
        fixture.household, fixture.stock_medication
    );

    let pillbox_target = Target {
        addr: server.addr,
        cpu: CpuSource::Process(server.child.id()),
    };
    let ceiling_target = Target {
        addr: ceiling.addr,
        cpu: CpuSource::Threads(CEILING_THREAD),
    };
    let mut rows = Vec::new();
    let mut removals_created = 0u64;
    for &clients in &settings.concurrency {
        let ceiling_run = drive(
            &ceiling_target,
            clients,
            &settings,
            Arc::new(Workload::Get {
                path: "/ping".into(),
                token: None,
            }),
        )
        .await;
        let ceiling_rps = ceiling_run.requests_per_second();
        rows.push(Row::new(
            "ceiling: minimal axum route",
            clients,
            &ceiling_run,
            ceiling_rps,
        ));

        let list_run = drive(
            &pillbox_target,
            clients,
            &settings,
            Arc::new(Workload::Get {
                path: list_path.clone(),
                token: Some(fixture.token.clone()),
            }),
        )
        .await;
        rows.push(Row::new(
            "GET listMedications (per_page=20)",
            clients,
            &list_run,
            ceiling_rps,
        ));

        let removal_run = drive(
            &pillbox_target,
            clients,
            &settings,
            Arc::new(Workload::StockRemoval {
                path: removal_path.clone(),
                token: fixture.token.clone(),
            }),
        )
        .await;
        removals_created += removal_run.successes_including_warmup;
        rows.push(Row::new(
            "POST createStockRemoval",
            clients,
            &removal_run,
            ceiling_rps,
        ));
    }

    print_table(&rows);
    for row in &rows {
        if let Some(sample) = &row.first_error {
            println!("first error in {} x{}: {sample}", row.scenario, row.clients);
        }
    }

    // Every acknowledged removal must be in the stock, exactly once.
    let supply = fixture.current_supply(&server).await?;
    let number = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
    let expected = number(LARGE_SUPPLY) - number(REMOVAL_QUANTITY) * removals_created as f64;
    let stock_ok = (supply - expected).abs() < 1e-6;
    println!(
        "stock check: {removals_created} removals acknowledged, current_supply {supply} (expected {expected}): {}",
        if stock_ok { "ok" } else { "MISMATCH" }
    );

    println!("load average after the run: {}", load_average());

    ceiling.stop();
    drop(server);
    drop(data);
    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 || !stock_ok {
        return Err(format!(
            "{errors} request errors{}",
            if stock_ok {
                ""
            } else {
                " and a stock mismatch"
            }
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The fixture

/// The household, its medications and the token the workloads use.
struct Fixture {
    household: i64,
    token: String,
    stock_medication: i64,
}

impl Fixture {
    async fn create(server: &Pillbox, household: i64, token: String) -> BenchResult<Fixture> {
        let mut conn = HttpConn::connect_within(server.addr).await?;
        let path = format!("/api/v1/households/{household}/medications");
        let mut stock_medication = None;
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
            let response = conn
                .send_within(&Request::post(&path, &token, &body))
                .await
                .map_err(|e| format!("createMedication: {e}"))?;
            if response.status != 201 {
                return Err(format!(
                    "createMedication answered {}: {}",
                    response.status,
                    response.body_text()
                ));
            }
            let created: Value = serde_json::from_slice(&response.body)
                .map_err(|e| format!("createMedication body: {e}"))?;
            if i == 0 {
                stock_medication = created["data"]["id"].as_i64();
            }
        }
        Ok(Fixture {
            household,
            token,
            stock_medication: stock_medication.ok_or("createMedication returned no id")?,
        })
    }

    async fn current_supply(&self, server: &Pillbox) -> BenchResult<f64> {
        let mut conn = HttpConn::connect_within(server.addr).await?;
        let path = format!(
            "/api/v1/households/{}/medications/{}",
            self.household, self.stock_medication
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
// The ceiling: a minimal axum route on its own thread and runtime

/// Name of every thread of the ceiling server (at most 15 bytes: Linux's limit).
const CEILING_THREAD: &str = "ceiling-server";

struct Ceiling {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Ceiling {
    fn start() -> BenchResult<Ceiling> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(CEILING_THREAD.into())
            .spawn(move || {
                // The same runtime flavour and size as `pillbox serve` uses.
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .thread_name(CEILING_THREAD)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("ceiling runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(format!("ceiling bind: {e}")));
                            return;
                        }
                    };
                    let addr = listener.local_addr().map_err(|e| e.to_string());
                    let _ = ready_tx.send(addr);
                    let app = axum::Router::new().route(
                        "/ping",
                        axum::routing::get(|| async {
                            axum::Json(json!({"data": {"status": "ok"}}))
                        }),
                    );
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .map_err(|e| format!("cannot start the ceiling thread: {e}"))?;
        let addr = ready_rx
            .recv_timeout(STARTUP_TIMEOUT)
            .map_err(|e| format!("ceiling server did not start: {e}"))??;
        Ok(Ceiling { addr, stop, thread })
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

// ---------------------------------------------------------------------------
// Load generation

/// A server to drive and where to read its CPU time.
struct Target {
    addr: SocketAddr,
    cpu: CpuSource,
}

enum CpuSource {
    /// A whole process (every thread): the pillbox child.
    Process(u32),
    /// The threads of this process with this name: the in-process ceiling.
    Threads(&'static str),
}

impl CpuSource {
    /// User + system CPU time so far, from /proc (None where unavailable).
    fn read(&self) -> Option<Duration> {
        match self {
            CpuSource::Process(pid) => stat_cpu(&format!("/proc/{pid}/stat")),
            CpuSource::Threads(name) => {
                let mut total = Duration::ZERO;
                for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
                    let path = task.path();
                    let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
                    if comm.trim_end() == *name {
                        total += stat_cpu(&path.join("stat").to_string_lossy()).unwrap_or_default();
                    }
                }
                Some(total)
            }
        }
    }
}

enum Workload {
    Get { path: String, token: Option<String> },
    StockRemoval { path: String, token: String },
}

impl Workload {
    fn request(&self) -> Request {
        match self {
            Workload::Get { path, token } => Request::get(path, token.as_deref()),
            Workload::StockRemoval { path, token } => {
                // A new submission id each time: each request is a new removal.
                let body = json!({"stock_removal": {
                    "quantity": REMOVAL_QUANTITY,
                    "reason": "other",
                    "submission_id": uuid::Uuid::now_v7().to_string(),
                }});
                Request::post(path, token, &body)
            }
        }
    }

    fn expected_status(&self) -> u16 {
        match self {
            Workload::Get { .. } => 200,
            Workload::StockRemoval { .. } => 201,
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

/// `clients` concurrent keep-alive clients against `addr` for warm-up + measure.
async fn drive(
    target: &Target,
    clients: usize,
    settings: &Settings,
    workload: Arc<Workload>,
) -> RunStats {
    let start = Instant::now();
    let window_start = start + settings.warmup;
    let end = window_start + settings.measure;
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let workload = workload.clone();
            tokio::spawn(client(target.addr, workload, window_start, end))
        })
        .collect();
    // The server's CPU time over the measured window.
    tokio::time::sleep_until(window_start.into()).await;
    let cpu_before = target.cpu.read();
    tokio::time::sleep_until(end.into()).await;
    let cpu_after = target.cpu.read();
    let mut stats = RunStats {
        measured: settings.measure,
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
    ratio: f64,
    cpu_us: Option<f64>,
    first_error: Option<String>,
}

impl Row {
    fn new(scenario: &'static str, clients: usize, stats: &RunStats, ceiling_rps: f64) -> Row {
        let rps = stats.requests_per_second();
        Row {
            scenario,
            clients,
            rps,
            p50: stats.percentile_ms(50.0),
            p99: stats.percentile_ms(99.0),
            errors: stats.errors,
            ratio: if ceiling_rps > 0.0 {
                rps / ceiling_rps
            } else {
                f64::NAN
            },
            cpu_us: stats.cpu_us_per_request(),
            first_error: stats.first_error.clone(),
        }
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "| {:<34} | {:>7} | {:>10} | {:>8} | {:>8} | {:>6} | {:>10} | {:>15} |",
        "scenario",
        "clients",
        "requests/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "of ceiling",
        "server CPU/req"
    );
    println!(
        "|{:-<36}|{:->9}|{:->12}|{:->10}|{:->10}|{:->8}|{:->12}|{:->17}|",
        "", ":", ":", ":", ":", ":", ":", ":"
    );
    for row in rows {
        let cpu = row
            .cpu_us
            .map_or_else(|| "n/a".to_string(), |us| format!("{us:.0} µs"));
        println!(
            "| {:<34} | {:>7} | {:>10.0} | {:>8.2} | {:>8.2} | {:>6} | {:>9.1}% | {:>15} |",
            row.scenario,
            row.clients,
            row.rps,
            row.p50,
            row.p99,
            row.errors,
            row.ratio * 100.0,
            cpu
        );
    }
    println!();
}

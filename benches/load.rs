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

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::TcpStream;

const PASSWORD: &str = "load-benchmark-password";
const EMAIL: &str = "owner@bench.example";
const MEDICATIONS: usize = 20;
/// Supply of the medication the removals draw from: far more than any run takes.
const LARGE_SUPPLY: &str = "100000000";
const REMOVAL_QUANTITY: &str = "0.25";
/// One request that takes longer than this counts as an error (and reconnects).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response head or body the client accepts.
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

type BenchResult<T> = Result<T, String>;

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

    let (server, household, token) = Pillbox::start(data.path()).await?;
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
// The machine

fn print_machine(data_dir: &Path) {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map(|kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    println!("machine: {model}, {cpus} CPUs (nproc), {memory} RAM, Linux {kernel}");
    println!("load average before the run: {}", load_average());
    println!(
        "data directory: {} on {}",
        data_dir.display(),
        file_system_of(data_dir)
    );
}

/// The 1, 5 and 15 minute load averages: other work on the machine skews the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The file system type of the mount holding `path` (longest mount-point prefix).
fn file_system_of(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _device = fields.next()?;
            let mount_point = fields.next()?.replace("\\040", " ");
            let fs_type = fields.next()?;
            path.starts_with(&mount_point)
                .then(|| (mount_point.len(), format!("{fs_type} ({mount_point})")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs)
        .unwrap_or_else(|| "an unknown file system".into())
}

// ---------------------------------------------------------------------------
// The pillbox server under test

/// The running `pillbox serve` child; killed when dropped.
struct Pillbox {
    binary: PathBuf,
    child: Child,
    addr: SocketAddr,
}

impl Drop for Pillbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pillbox {
    /// Sets up a household and its owner token, then starts serving:
    /// (server, household id, token).
    async fn start(data_dir: &Path) -> BenchResult<(Pillbox, i64, String)> {
        let binary = std::env::var_os("PILLBOX_BENCH_BINARY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_pillbox")));
        let dir = data_dir.to_path_buf();
        let bin = binary.clone();
        // The CLI steps block (argon2 hashing): keep them off the runtime threads.
        let (household, token) = tokio::task::spawn_blocking(move || set_up(&bin, &dir))
            .await
            .map_err(|e| format!("set-up task failed: {e}"))??;

        let addr = free_local_addr()?;
        let log = std::fs::File::create(data_dir.join("serve.log"))
            .map_err(|e| format!("cannot create the server log: {e}"))?;
        let child = Command::new(&binary)
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--rate-limit")
            .arg("0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut server = Pillbox {
            binary,
            child,
            addr,
        };
        server.wait_until_ready(data_dir).await?;
        Ok((server, household, token))
    }

    async fn wait_until_ready(&mut self, data_dir: &Path) -> BenchResult<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(data_dir.join("serve.log")).unwrap_or_default();
                return Err(format!("pillbox serve exited early ({status}):\n{log}"));
            }
            let probe = async {
                let mut conn = HttpConn::connect(self.addr).await.ok()?;
                let response = conn
                    .send(&Request::get("/api/v1/capabilities", None))
                    .await
                    .ok()?;
                Some(response.status)
            };
            if let Ok(Some(200)) = tokio::time::timeout(Duration::from_secs(2), probe).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "pillbox serve did not answer on {} within {STARTUP_TIMEOUT:?}",
                    self.addr
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `pillbox setup` (password on stdin) and `pillbox token create`.
fn set_up(binary: &Path, data_dir: &Path) -> BenchResult<(i64, String)> {
    let mut setup = Command::new(binary)
        .arg("setup")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--household", "Load benchmark", "--email", EMAIL])
        .args(["--time-zone", "UTC", "--name", "Bench Owner"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {} setup: {e}", binary.display()))?;
    if let Some(mut stdin) = setup.stdin.take() {
        writeln!(stdin, "{PASSWORD}").map_err(|e| format!("cannot send the password: {e}"))?;
    }
    let out = setup
        .wait_with_output()
        .map_err(|e| format!("pillbox setup: {e}"))?;
    let household = command_stdout("pillbox setup", &out)?
        .parse::<i64>()
        .map_err(|e| format!("pillbox setup printed no household id: {e}"))?;

    let out = Command::new(binary)
        .args(["token", "create", "--data-dir"])
        .arg(data_dir)
        .args(["--household", &household.to_string(), "--email", EMAIL])
        .args(["--name", "load benchmark"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} token create: {e}", binary.display()))?;
    let token = command_stdout("pillbox token create", &out)?;
    if token.is_empty() {
        return Err("pillbox token create printed no token".into());
    }
    Ok((household, token))
}

fn command_stdout(what: &str, out: &std::process::Output) -> BenchResult<String> {
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_local_addr() -> BenchResult<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map_err(|e| format!("cannot read the free port: {e}"))
}

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

/// utime + stime of a /proc `stat` file. Linux reports them in USER_HZ
/// ticks, which is 100 a second on every architecture it supports.
fn stat_cpu(path: &str) -> Option<Duration> {
    const TICKS_PER_SECOND: u64 = 100;
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (which may hold spaces and parentheses);
    // utime and stime are fields 14 and 15 of the whole line.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SECOND,
    ))
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
// A small HTTP/1.1 client: one request at a time on a keep-alive connection,
// responses framed by Content-Length or chunked transfer coding (or, failing
// both, by the connection closing).

struct Request {
    bytes: Vec<u8>,
}

impl Request {
    fn get(path: &str, token: Option<&str>) -> Request {
        let mut head =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n");
        if let Some(token) = token {
            let _ = write!(head, "Authorization: Bearer {token}\r\n");
        }
        head.push_str("\r\n");
        Request {
            bytes: head.into_bytes(),
        }
    }

    fn post(path: &str, token: &str, body: &Value) -> Request {
        let body = body.to_string();
        let mut bytes = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
             Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        Request { bytes }
    }
}

struct Response {
    status: u16,
    body: Vec<u8>,
    /// The server will close the connection after this response.
    close: bool,
}

impl Response {
    fn body_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.chars().take(300).collect()
    }
}

struct HttpConn {
    stream: TcpStream,
    /// Bytes read but not yet consumed.
    buf: Vec<u8>,
}

impl HttpConn {
    async fn connect(addr: SocketAddr) -> std::io::Result<HttpConn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(HttpConn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// `connect`, failing after `REQUEST_TIMEOUT`.
    async fn connect_within(addr: SocketAddr) -> Result<HttpConn, String> {
        match tokio::time::timeout(REQUEST_TIMEOUT, HttpConn::connect(addr)).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(format!("cannot connect to {addr}: {e}")),
            Err(_) => Err(format!(
                "cannot connect to {addr} within {REQUEST_TIMEOUT:?}"
            )),
        }
    }

    /// `send`, failing after `REQUEST_TIMEOUT`.
    async fn send_within(&mut self, request: &Request) -> Result<Response, String> {
        tokio::time::timeout(REQUEST_TIMEOUT, self.send(request))
            .await
            .map_err(|_| format!("no response within {REQUEST_TIMEOUT:?}"))?
    }

    async fn send(&mut self, request: &Request) -> Result<Response, String> {
        self.write_all(&request.bytes)
            .await
            .map_err(|e| format!("write: {e}"))?;
        self.read_response().await
    }

    // Readiness plus try_write/try_read: what tokio's io-util extension
    // traits do, without enabling that feature for the whole crate.
    async fn write_all(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            self.stream.writable().await?;
            match self.stream.try_write(bytes) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn read_some(&self, chunk: &mut [u8]) -> std::io::Result<usize> {
        loop {
            self.stream.readable().await?;
            match self.stream.try_read(chunk) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads more bytes into `buf`; false at end of stream.
    async fn fill(&mut self) -> Result<bool, String> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self
            .read_some(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if self.buf.len() + n > MAX_RESPONSE {
            return Err("response too large".into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    async fn read_response(&mut self) -> Result<Response, String> {
        loop {
            let (status, framing, close, head_len) = loop {
                if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                    let parsed = parse_head(&self.buf[..end])?;
                    break (parsed.0, parsed.1, parsed.2, end + 4);
                }
                if !self.fill().await? {
                    return Err("connection closed before a response".into());
                }
            };
            self.buf.drain(..head_len);
            // 1xx answers carry no body and precede the real response.
            if (100..200).contains(&status) {
                continue;
            }
            let body = match framing {
                Framing::NoBody => Vec::new(),
                Framing::Length(len) => {
                    if len > MAX_RESPONSE {
                        return Err(format!("Content-Length {len} too large"));
                    }
                    while self.buf.len() < len {
                        if !self.fill().await? {
                            return Err("connection closed inside a body".into());
                        }
                    }
                    self.buf.drain(..len).collect()
                }
                Framing::Chunked => self.read_chunked().await?,
                Framing::UntilClose => {
                    while self.fill().await? {}
                    std::mem::take(&mut self.buf)
                }
            };
            let close = close || matches!(framing, Framing::UntilClose);
            return Ok(Response {
                status,
                body,
                close,
            });
        }
    }

    async fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&self.buf, b"\r\n") {
                    break i;
                }
                if !self.fill().await? {
                    return Err("connection closed inside a chunk size".into());
                }
            };
            let line =
                std::str::from_utf8(&self.buf[..line_end]).map_err(|_| "chunk size is not text")?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| format!("bad chunk size {size_text:?}"))?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers, if any, end with an empty line.
                loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        self.buf.drain(..i + 2);
                        if i == 0 {
                            return Ok(body);
                        }
                        continue;
                    }
                    if !self.fill().await? {
                        return Err("connection closed inside trailers".into());
                    }
                }
            }
            if body.len() + size > MAX_RESPONSE {
                return Err("chunked body too large".into());
            }
            while self.buf.len() < size + 2 {
                if !self.fill().await? {
                    return Err("connection closed inside a chunk".into());
                }
            }
            body.extend_from_slice(&self.buf[..size]);
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err("chunk not followed by CRLF".into());
            }
            self.buf.drain(..size + 2);
        }
    }
}

enum Framing {
    NoBody,
    Length(usize),
    Chunked,
    UntilClose,
}

/// Status, body framing and whether the connection closes afterwards.
fn parse_head(head: &[u8]) -> Result<(u16, Framing, bool), String> {
    let head = std::str::from_utf8(head).map_err(|_| "response head is not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x response: {status_line:?}"));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let mut length = None;
    let mut chunked = false;
    let mut close = version == "HTTP/1.0";
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse::<usize>()
                .map_err(|_| format!("bad Content-Length {value:?}"))?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting Content-Length headers".into());
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
    }
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::NoBody
    } else if chunked {
        // Transfer-Encoding wins over Content-Length (RFC 9112 6.3).
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok((status, framing, close))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
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

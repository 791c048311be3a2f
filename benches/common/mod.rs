//! What the benchmarks share: the machine description, the `pillbox`
//! child process they drive (set up, served on a free port on 127.0.0.1,
//! killed on drop), CPU and memory readings from /proc, and a small
//! HTTP/1.1 client.
//!
//! Each benchmark is its own crate and uses a part of this module.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::TcpStream;

pub const PASSWORD: &str = "load-benchmark-password";
pub const EMAIL: &str = "owner@bench.example";
/// One request that takes longer than this counts as an error (and reconnects).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response head or body the client accepts unless told otherwise.
pub const MAX_RESPONSE: usize = 16 * 1024 * 1024;

pub type BenchResult<T> = Result<T, String>;

// ---------------------------------------------------------------------------
// The machine

pub fn print_machine(data_dir: &Path) {
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
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The file system type of the mount holding `path` (longest mount-point prefix).
pub fn file_system_of(path: &Path) -> String {
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
pub struct Pillbox {
    pub binary: PathBuf,
    pub child: Child,
    pub addr: SocketAddr,
}

impl Drop for Pillbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Names the set-up steps give what they create.
#[derive(Clone, Copy)]
pub struct Names {
    /// The household `pillbox setup` creates.
    pub household: &'static str,
    /// The owner's token `pillbox token create` makes.
    pub token: &'static str,
}

impl Pillbox {
    /// Sets up a household (its owner has a person of their own) and the
    /// owner's token, then starts serving: (server, household id, token).
    pub async fn start(data_dir: &Path, names: Names) -> BenchResult<(Pillbox, i64, String)> {
        let binary = std::env::var_os("PILLBOX_BENCH_BINARY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_pillbox")));
        let dir = data_dir.to_path_buf();
        let bin = binary.clone();
        // The CLI steps block (argon2 hashing): keep them off the runtime threads.
        let (household, token) = tokio::task::spawn_blocking(move || set_up(&bin, &dir, names))
            .await
            .map_err(|e| format!("set-up task failed: {e}"))??;

        let addr = free_local_addr()?;
        let log = std::fs::File::create(data_dir.join("serve.log"))
            .map_err(|e| format!("cannot create the server log: {e}"))?;
        // PILLBOX_BENCH_PIN_CPU=N serves from CPU N alone (taskset execs the
        // binary, so the child's pid is the server's).
        let mut command = match pinned_cpu()? {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(&binary);
                c
            }
            None => Command::new(&binary),
        };
        let child = command
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

/// The CPU `PILLBOX_BENCH_PIN_CPU` names, if set.
pub fn pinned_cpu() -> BenchResult<Option<usize>> {
    match std::env::var("PILLBOX_BENCH_PIN_CPU") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| format!("PILLBOX_BENCH_PIN_CPU={v:?} is not a CPU number")),
        _ => Ok(None),
    }
}

/// Threads of a process, from `/proc/<pid>/status`.
pub fn threads(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("Threads:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `pillbox setup` (password on stdin) and `pillbox token create`.
fn set_up(binary: &Path, data_dir: &Path, names: Names) -> BenchResult<(i64, String)> {
    let mut setup = Command::new(binary)
        .arg("setup")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--household", names.household, "--email", EMAIL])
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
        .args(["--name", names.token])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} token create: {e}", binary.display()))?;
    let token = command_stdout("pillbox token create", &out)?;
    if token.is_empty() {
        return Err("pillbox token create printed no token".into());
    }
    Ok((household, token))
}

pub fn command_stdout(what: &str, out: &std::process::Output) -> BenchResult<String> {
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
pub fn free_local_addr() -> BenchResult<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map_err(|e| format!("cannot read the free port: {e}"))
}

// ---------------------------------------------------------------------------
// CPU time and memory from /proc

/// utime + stime of a /proc `stat` file. Linux reports them in USER_HZ
/// ticks, which is 100 a second on every architecture it supports.
pub fn stat_cpu(path: &str) -> Option<Duration> {
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

/// A process's memory figures (kibibytes) from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// Resident set size now (VmRSS).
    pub rss_kib: u64,
    /// Peak resident set size since start or the last reset (VmHWM).
    pub hwm_kib: u64,
}

/// `pid` is a process id, or `"self"`.
pub fn memory(pid: &str) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some(Memory {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// Resets the peak resident set size (VmHWM) of `pid` to its current size
/// (Linux 4.0 and later: "5" written to clear_refs). False where refused.
pub fn reset_peak_memory(pid: &str) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

// ---------------------------------------------------------------------------
// A small HTTP/1.1 client: one request at a time on a keep-alive connection,
// responses framed by Content-Length or chunked transfer coding (or, failing
// both, by the connection closing).

pub struct Request {
    pub bytes: Vec<u8>,
}

impl Request {
    pub fn get(path: &str, token: Option<&str>) -> Request {
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

    pub fn post(path: &str, token: &str, body: &Value) -> Request {
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

pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// The server will close the connection after this response.
    pub close: bool,
}

impl Response {
    pub fn body_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.chars().take(300).collect()
    }
}

pub struct HttpConn {
    stream: TcpStream,
    /// Bytes read but not yet consumed.
    buf: Vec<u8>,
    /// Largest response head or body accepted.
    max_response: usize,
    /// How long `send_within` waits for a whole response.
    timeout: Duration,
}

impl HttpConn {
    pub async fn connect(addr: SocketAddr) -> std::io::Result<HttpConn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(HttpConn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            max_response: MAX_RESPONSE,
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// Accepts responses up to `max_response` bytes and lets `send_within`
    /// wait up to `timeout` (instead of `MAX_RESPONSE` and `REQUEST_TIMEOUT`).
    pub fn with_limits(mut self, max_response: usize, timeout: Duration) -> HttpConn {
        self.max_response = max_response;
        self.timeout = timeout;
        self
    }

    /// `connect`, failing after `REQUEST_TIMEOUT`.
    pub async fn connect_within(addr: SocketAddr) -> Result<HttpConn, String> {
        match tokio::time::timeout(REQUEST_TIMEOUT, HttpConn::connect(addr)).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(format!("cannot connect to {addr}: {e}")),
            Err(_) => Err(format!(
                "cannot connect to {addr} within {REQUEST_TIMEOUT:?}"
            )),
        }
    }

    /// `send`, failing after the connection's timeout (`REQUEST_TIMEOUT`
    /// unless set with `with_limits`).
    pub async fn send_within(&mut self, request: &Request) -> Result<Response, String> {
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.send(request))
            .await
            .map_err(|_| format!("no response within {timeout:?}"))?
    }

    pub async fn send(&mut self, request: &Request) -> Result<Response, String> {
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
        if self.buf.len() + n > self.max_response {
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
                    if len > self.max_response {
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
            if body.len() + size > self.max_response {
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

pub enum Framing {
    NoBody,
    Length(usize),
    Chunked,
    UntilClose,
}

/// Status, body framing and whether the connection closes afterwards.
pub fn parse_head(head: &[u8]) -> Result<(u16, Framing, bool), String> {
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

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

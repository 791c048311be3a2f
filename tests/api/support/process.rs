//! The real binary as a process: commands run to completion with a deadline,
//! `serve` children killed by a guard (so a failing test never leaves a
//! server running), and a minimal blocking HTTP/1.1 client over
//! `std::net::TcpStream` (one fresh connection per request).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_pillbox");
pub(crate) const PASSWORD: &str = "correct horse battery staple";
/// The passphrase of a backup or an export, as a command reads it from stdin.
pub(crate) const PASSPHRASE_LINE: &str = "a long family passphrase\n";
/// The longest any single wait (a command, a server start) may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);

/// Settings a developer's shell might carry; each test sets what it means.
pub(crate) const INHERITED: &[&str] = &[
    "PILLBOX_DATA_DIR",
    "PILLBOX_LISTEN",
    "PILLBOX_PUBLIC_URL",
    "PILLBOX_RATE_LIMIT",
    "PILLBOX_AUTH_FAILURE_LIMIT",
    "PILLBOX_TRUSTED_PROXIES",
    "PILLBOX_HEADER_READ_TIMEOUT",
    "PILLBOX_IDLE_TIMEOUT",
    "PILLBOX_MAX_CONNECTIONS",
    "PILLBOX_BLOCKING_THREADS",
    "PILLBOX_READER_THREADS",
    "PILLBOX_LOG_FORMAT",
    "PILLBOX_OAUTH_MOBILE_CLIENT_ID",
    "PILLBOX_OAUTH_MOBILE_REDIRECT_URIS",
    "PILLBOX_OAUTH_WEB_CLIENT_ID",
    "PILLBOX_OAUTH_WEB_REDIRECT_URIS",
    "PILLBOX_ACCESS_TOKEN_TTL",
    "PILLBOX_REFRESH_TOKEN_TTL_DAYS",
    "RUST_LOG",
    "NO_COLOR",
];

/// The number `sql` (a `SELECT count(*) ...`) answers, through a read-only
/// connection to the database of the data directory `data`.
pub(crate) fn count_rows(data: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open_with_flags(
        data.join(pillbox::db::DATABASE_FILE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the database read-only")
    .query_row(sql, [], |r| r.get(0))
    .unwrap()
}

/// `pillbox <args>` with none of the inherited settings.
pub(crate) fn pillbox(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for var in INHERITED {
        cmd.env_remove(var);
    }
    cmd
}

/// Kills and reaps the child when dropped, whatever happened in between.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

impl Guard {
    /// Waits for the child to exit, at most `limit`.
    pub(crate) fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the child wrote to its piped stdout and stderr (blocks
    /// until they close, so call it once the child has exited).
    pub(crate) fn read_all(&mut self) -> (String, String) {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut s) = self.0.stdout.take() {
            s.read_to_string(&mut out).expect("read stdout");
        }
        if let Some(mut s) = self.0.stderr.take() {
            s.read_to_string(&mut err).expect("read stderr");
        }
        (out, err)
    }
}

pub(crate) struct Outcome {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    #[track_caller]
    pub(crate) fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "expected success, got {}; stdout: {:?}; stderr: {:?}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// A failed command: non-zero, nothing on stdout, exactly one clear line
    /// on stderr containing `needle`.
    #[track_caller]
    pub(crate) fn assert_one_line_failure(&self, needle: &str) -> &Self {
        assert!(
            !self.status.success(),
            "expected failure; stdout: {:?}; stderr: {:?}",
            self.stdout,
            self.stderr
        );
        assert_eq!(self.stdout, "", "nothing on stdout on failure");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "exactly one line on stderr: {:?}",
            self.stderr
        );
        assert!(
            lines[0].starts_with("pillbox: error: ") && lines[0].contains(needle),
            "stderr line {:?} should mention {needle:?}",
            lines[0]
        );
        self
    }

    /// stdout is exactly one line; returns it.
    #[track_caller]
    pub(crate) fn single_stdout_line(&self) -> &str {
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "one line on stdout: {:?}", self.stdout);
        assert!(self.stdout.ends_with('\n'));
        lines[0]
    }
}

/// Runs a command to completion (bounded), with `stdin` piped in or closed.
pub(crate) fn run(mut cmd: Command, stdin: Option<&str>) -> Outcome {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut guard = Guard(cmd.spawn().expect("spawn pillbox"));
    if let Some(input) = stdin {
        let mut pipe = guard.0.stdin.take().expect("stdin pipe");
        // The binary may fail (bad arguments) before reading: ignore EPIPE.
        let _ = pipe.write_all(input.as_bytes());
    }
    let status = guard
        .wait_for_exit(DEADLINE)
        .expect("pillbox did not exit within the deadline");
    let (stdout, stderr) = guard.read_all();
    Outcome {
        status,
        stdout,
        stderr,
    }
}

pub(crate) fn password_line() -> String {
    format!("{PASSWORD}\n")
}

/// `pillbox setup` of a household "Home" owned by `email` (their person
/// "Olive Owner"), password on stdin, plus `extra` arguments.
pub(crate) fn setup_with(data: &Path, email: &str, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "setup",
        "--data-dir",
        data.to_str().unwrap(),
        "--household",
        "Home",
        "--email",
        email,
        "--time-zone",
        "Europe/London",
        "--name",
        "Olive Owner",
    ];
    args.extend_from_slice(extra);
    run(pillbox(&args), Some(&password_line()))
}

/// `pillbox setup` of a household "Home" owned by `email`, password on stdin.
pub(crate) fn setup_in(data: &Path, email: &str) -> Outcome {
    setup_with(data, email, &[])
}

/// A fresh data dir with one household owned by owner@example.org; returns
/// (temp dir, data dir, household id).
pub(crate) fn set_up_household() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = setup_in(&data, "owner@example.org");
    out.assert_success();
    let id = out.single_stdout_line().to_string();
    (dir, data, id)
}

/// `pillbox token create` for `email` in `household`, plus `extra` arguments.
pub(crate) fn token_create(data: &Path, household: &str, email: &str, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "token",
        "create",
        "--data-dir",
        data.to_str().unwrap(),
        "--household",
        household,
        "--email",
        email,
        "--name",
        "laptop",
    ];
    args.extend_from_slice(extra);
    run(pillbox(&args), None)
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// `pillbox serve` on 127.0.0.1:`port` over `data` with the rate limit off;
/// returns once it answers. Its log (one line per request) goes to `log`, a
/// file, so a busy server never blocks on a full pipe nobody reads.
pub(crate) fn serve(data: &Path, port: u16, log: &Path) -> Guard {
    serve_with(data, port, log, |_| {})
}

/// [`serve`], with `configure` applied to the command first (its
/// environment, say).
pub(crate) fn serve_with(
    data: &Path,
    port: u16,
    log: &Path,
    configure: impl FnOnce(&mut Command),
) -> Guard {
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = pillbox(&[
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        &listen,
        "--rate-limit",
        "0",
    ]);
    configure(&mut cmd);
    let log_file = std::fs::File::create(log).expect("create the serve log");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file));
    let mut server = Guard(cmd.spawn().expect("spawn pillbox serve"));
    if let Err(problem) = poll_until_serving(&mut server, port) {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        panic!("{problem}; log: {log}");
    }
    server
}

pub(crate) struct HttpResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn broken(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, what.into())
}

/// A minimal HTTP/1.1 GET over a fresh connection (`Connection: close`).
pub(crate) fn http_get(port: u16, path: &str, token: Option<&str>) -> io::Result<HttpResponse> {
    http_request(port, "GET", path, token, &[], None)
}

/// One HTTP/1.1 request over a fresh connection (`Connection: close`), with
/// an optional bearer token, extra headers and a JSON body.
///
/// Anything short of a complete response (refused connection, reset, a
/// server that died before or while answering: no status line, a body
/// shorter than its Content-Length, a cut chunked body) is an `Err`, never
/// a panic, so a client can count it as "not acknowledged".
pub(crate) fn http_request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> io::Result<HttpResponse> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        // JSON unless the caller names another type (a form).
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        {
            request.push_str("Content-Type: application/json\r\n");
        }
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    if let Some(body) = body {
        request.push_str(body);
    }
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(raw)
}

fn parse_response(raw: Vec<u8>) -> io::Result<HttpResponse> {
    let text = String::from_utf8(raw).map_err(|_| broken("response is not UTF-8"))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| broken(format!("no end of headers in {text:?}")))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| broken(format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut response = HttpResponse {
        status,
        headers,
        body: body.to_string(),
    };
    if response
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        response.body = dechunk(body)?;
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| broken(format!("bad Content-Length {length:?}")))?;
        if response.body.len() != length {
            return Err(broken(format!(
                "body of {} bytes, Content-Length {length}",
                response.body.len()
            )));
        }
    }
    Ok(response)
}

/// The body of a chunked response; a cut or malformed one is an `Err`.
pub(crate) fn dechunk(mut rest: &str) -> io::Result<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest
            .split_once("\r\n")
            .ok_or_else(|| broken("chunk size line"))?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|_| broken(format!("bad chunk size {size:?}")))?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = after.get(..size).ok_or_else(|| broken("chunk cut short"))?;
        out.push_str(chunk);
        rest = after
            .get(size..)
            .and_then(|r| r.strip_prefix("\r\n"))
            .ok_or_else(|| broken("chunk not followed by CRLF"))?;
    }
}

/// Polls until the server answers; panics with its log if it exits or the
/// deadline passes.
pub(crate) fn wait_until_serving(server: &mut Guard, port: u16) {
    if let Err(problem) = poll_until_serving(server, port) {
        let (_, err) = server.read_all();
        panic!("{problem}: {err}");
    }
}

/// Polls until the server answers on `port`, at most [`DEADLINE`]; kills it
/// and says why when it exits first or the deadline passes.
fn poll_until_serving(server: &mut Guard, port: u16) -> Result<(), String> {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            return Err(format!("serve exited early with {status}"));
        }
        if http_get(port, "/api/v1/capabilities", None).is_ok() {
            return Ok(());
        }
        if Instant::now() >= end {
            let _ = server.0.kill();
            let _ = server.0.wait();
            return Err(format!(
                "serve did not answer on port {port} within {DEADLINE:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn responses_cut_short_are_errors_not_panics() {
    let whole = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}";
    let ok = parse_response(whole.as_bytes().to_vec()).unwrap();
    assert_eq!((ok.status, ok.body.as_str()), (201, "{}"));
    for cut in [
        "",
        "HTTP/1.1 201 Cre",
        "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
    ] {
        assert!(parse_response(cut.as_bytes().to_vec()).is_err(), "{cut:?}");
    }
    let chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n";
    assert_eq!(
        parse_response(chunked.as_bytes().to_vec()).unwrap().body,
        "abc"
    );
}

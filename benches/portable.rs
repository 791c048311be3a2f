//! Portable benchmark: the household of `benches/sync.rs` (4 people, 20
//! medications, 5 sources each, `PILLBOX_BENCH_TAKES` takes over 3 years,
//! seeded as sync batches of 200), then the encrypted v2 export
//! (`exportPortableHouseholdBundle`), its dry run and its import into a
//! fresh household on a second database (`dryRunPortableImport`,
//! `createPortableImport`). Each is timed and its peak memory taken: the
//! growth of this process's peak resident set (VmHWM, reset through
//! `/proc/self/clear_refs` just before) over the resident size at the reset.
//!
//! The Router runs in this process (no socket): the figures are the work of
//! the server itself. Run with `cargo bench --bench portable`; for a quick
//! look without a release build, `cargo build --benches` and run
//! `target/debug/deps/portable-* --bench` (dependencies are optimised in
//! the dev profile, the pillbox crate is not). Settings: `PILLBOX_BENCH_TAKES`
//! (default 50000), `PILLBOX_BENCH_DIR` (where the temporary databases go).

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use jiff::{SignedDuration, Timestamp};
use pillbox::auth::Role;
use pillbox::config::Settings;
use pillbox::db::Db;
use pillbox::household::app_tokens::{self, TokenRequest};
use pillbox::household::{self, NewMember};
use serde_json::{Value, json};
use tower::ServiceExt;

const PASSPHRASE: &str = "a long benchmark passphrase";
const HISTORY_DAYS: i64 = 3 * 365;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("portable benchmark: skipped (run it with `cargo bench --bench portable`)");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(message) = runtime.block_on(run()) {
        eprintln!("portable benchmark failed: {message}");
        std::process::exit(1);
    }
}

type BenchResult<T> = Result<T, String>;

struct Server {
    _dir: tempfile::TempDir,
    router: Router,
    prefix: String,
    token: String,
}

async fn server(base: &Option<std::path::PathBuf>) -> BenchResult<Server> {
    let dir = match base {
        Some(b) => tempfile::tempdir_in(b),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("temp dir: {e}"))?;
    let db = Db::open(dir.path()).map_err(|e| e.to_string())?;
    let hash =
        pillbox::auth::password::hash("correct horse battery staple").map_err(|e| e.to_string())?;
    let set_up = db
        .write(move |conn| {
            household::set_up(
                conn,
                "Bench",
                "UTC",
                &NewMember {
                    email: "owner@example.org",
                    password_hash: &hash,
                    person_name: "Bench Owner",
                    role: Role::Owner,
                },
            )
        })
        .await
        .map_err(|e| e.to_string())?;
    let (household_id, membership_id) = (set_up.household_id, set_up.membership_id);
    let token = db
        .write(move |conn| {
            app_tokens::issue(
                conn,
                &TokenRequest {
                    household_id,
                    membership_id,
                    name: "bench",
                    max_age_days: None,
                    issued_by: None,
                },
            )
        })
        .await
        .map_err(|e| e.to_string())?
        .token;
    let router = pillbox::app(pillbox::app::state(
        db,
        Settings {
            rate_limit_per_minute: 0,
            ..Settings::default()
        },
    ));
    Ok(Server {
        _dir: dir,
        router,
        prefix: format!("/api/v1/households/{household_id}"),
        token,
    })
}

impl Server {
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> BenchResult<(u16, Vec<u8>)> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.prefix))
            .header("authorization", format!("Bearer {}", self.token));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = match body {
            Some(b) => builder
                .header("content-type", "application/json")
                .body(Body::from(b)),
            None => builder.body(Body::empty()),
        }
        .map_err(|e| e.to_string())?;
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, bytes.to_vec()))
    }

    async fn data(
        &self,
        method: &str,
        path: &str,
        body: Value,
        expected: u16,
    ) -> BenchResult<Value> {
        let (status, bytes) = self
            .send(method, path, Some(body.to_string().into_bytes()), &[])
            .await?;
        let mut value: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if status != expected {
            return Err(format!("{method} {path}: {status} {value}"));
        }
        Ok(value["data"].take())
    }
}

async fn seed(server: &Server, takes: usize) -> BenchResult<()> {
    let mut people = vec![];
    let (_, listed) = server.send("GET", "/people", None, &[]).await?;
    let listed: Value = serde_json::from_slice(&listed).map_err(|e| e.to_string())?;
    people.push(listed["data"][0]["id"].as_i64().ok_or("no owner person")?);
    for (name, born) in [
        ("Ada Benchmark", "1950-02-03"),
        ("Ben Benchmark", "1984-07-19"),
        ("Cleo Benchmark", "2016-05-30"),
    ] {
        let p = server
            .data(
                "POST",
                "/people",
                json!({"person": {"name": name, "date_of_birth": born}}),
                201,
            )
            .await?;
        people.push(p["id"].as_i64().ok_or("person id")?);
    }
    let first_day = (Timestamp::now() - SignedDuration::from_hours(24 * HISTORY_DAYS))
        .strftime("%Y-%m-%d")
        .to_string();
    let mut sources = vec![];
    for (p, person) in people.iter().enumerate() {
        for k in 0..5 {
            let m = server
                .data(
                    "POST",
                    "/medications",
                    json!({"medication": {"name": format!("Benchmark medication {p}{k} 500mg tablets"),
                        "dose_amount": "1", "dose_unit": "tablet", "current_supply": "100000",
                        "reorder_threshold": "10"}}),
                    201,
                )
                .await?;
            let medication = m["id"].as_i64().ok_or("medication id")?;
            let (kind, path, body) = if k < 3 {
                (
                    "schedule",
                    "/schedules",
                    json!({"schedule": {"person_id": person, "medication_id": medication,
                        "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
                        "start_date": first_day}}),
                )
            } else {
                let mut a = json!({"person_id": person, "medication_id": medication});
                if k == 4 {
                    a["administration_kind"] = json!("as_needed");
                }
                (
                    "person_medication",
                    "/person_medications",
                    json!({"person_medication": a}),
                )
            };
            let s = server.data("POST", path, body, 201).await?;
            sources.push((
                kind,
                s["portable_id"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    let now = Timestamp::now().as_second();
    let first = now - HISTORY_DAYS * 24 * 3600;
    let step = (now - 60 - first) as f64 / takes as f64;
    let mut next = 0;
    while next < takes {
        let end = (next + 200).min(takes);
        let ops: Vec<Value> = (next..end)
            .map(|k| {
                let (kind, id) = &sources[k % sources.len()];
                let at = Timestamp::from_second(first + (k as f64 * step) as i64)
                    .unwrap_or(Timestamp::UNIX_EPOCH);
                json!({"action": "create", "resource_type": "medication_take", "attributes": {
                    "source_type": kind, "source_id": id, "taken_at": at.to_string(),
                    "client_uuid": uuid::Uuid::now_v7().to_string()}})
            })
            .collect();
        server
            .data(
                "POST",
                "/sync/batches",
                json!({"batch": {"operations": ops}}),
                201,
            )
            .await?;
        next = end;
    }
    Ok(())
}

fn status_kib(field: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Resets the peak and returns the resident size at the reset.
fn reset_peak() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_kib("VmRSS:")
}

struct Measured {
    name: &'static str,
    time: Duration,
    peak_growth_mib: f64,
    bytes: usize,
}

async fn measure<F, Fut>(name: &'static str, f: F) -> BenchResult<(Measured, Vec<u8>)>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = BenchResult<Vec<u8>>>,
{
    let at_reset = reset_peak();
    let started = Instant::now();
    let out = f().await?;
    let time = started.elapsed();
    let growth = match (at_reset, status_kib("VmHWM:")) {
        (Some(a), Some(p)) => p.saturating_sub(a) as f64 / 1024.0,
        _ => f64::NAN,
    };
    Ok((
        Measured {
            name,
            time,
            peak_growth_mib: growth,
            bytes: out.len(),
        },
        out,
    ))
}

async fn run() -> BenchResult<()> {
    let takes: usize = std::env::var("PILLBOX_BENCH_TAKES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(50_000);
    let base = std::env::var_os("PILLBOX_BENCH_DIR").map(std::path::PathBuf::from);
    let source = server(&base).await?;
    let started = Instant::now();
    seed(&source, takes).await?;
    println!(
        "seeded {takes} takes in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let header = [("X-Service-Portable-Passphrase", PASSPHRASE)];
    let (export, body) = measure("export v2 (exportPortableHouseholdBundle)", || async {
        let (status, body) = source
            .send("GET", "/portable_export?version=2", None, &header)
            .await?;
        if status != 200 {
            return Err(format!("export: {status}"));
        }
        Ok(body)
    })
    .await?;
    let destination = server(&base).await?;
    let (dry, _) = measure("dry run (dryRunPortableImport)", || async {
        let (status, out) = destination
            .send(
                "POST",
                "/portable_imports/dry_run",
                Some(body.clone()),
                &header,
            )
            .await?;
        if status != 200 {
            return Err(format!(
                "dry run: {status} {}",
                String::from_utf8_lossy(&out)
            ));
        }
        Ok(out)
    })
    .await?;
    let (import, out) = measure("import (createPortableImport)", || async {
        let (status, out) = destination
            .send("POST", "/portable_imports", Some(body.clone()), &header)
            .await?;
        if status != 201 {
            return Err(format!(
                "import: {status} {}",
                String::from_utf8_lossy(&out)
            ));
        }
        Ok(out)
    })
    .await?;
    let summary: Value = serde_json::from_slice(&out).map_err(|e| e.to_string())?;
    let imported = summary["data"]["created"]["medication_takes"]
        .as_u64()
        .unwrap_or(0);
    if imported != takes as u64 {
        return Err(format!("imported {imported} takes of {takes}"));
    }
    println!("| Operation | Time s | Peak memory growth MiB | Body MiB |");
    println!("|---|--:|--:|--:|");
    for m in [export, dry, import] {
        println!(
            "| {} | {:.2} | {:.0} | {:.1} |",
            m.name,
            m.time.as_secs_f64(),
            m.peak_growth_mib,
            m.bytes as f64 / 1048576.0
        );
    }
    Ok(())
}

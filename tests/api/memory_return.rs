//! Memory handed back by a quiet `pillbox serve`: the binary's code pages
//! its requests mapped in go back once no request has come for a moment;
//! and the allocator settings it runs with.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::process::{
    Guard, free_port, http_get, serve, serve_with, set_up_household, token_create,
};

/// Resident kB of the mappings of `exe` without write permission in the
/// process `pid` (its code, constant data and unwind tables).
fn resident_code_kb(pid: u32, exe: &Path) -> u64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("smaps");
    let mut counted = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            let permissions = fields.next().unwrap_or("");
            let path = fields.nth(3).unwrap_or("");
            counted = !permissions.contains('w') && Path::new(path) == exe;
        } else if first == "Rss:" && counted {
            kb += fields
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    kb
}

#[test]
#[cfg(target_os = "linux")]
fn a_quiet_server_hands_back_the_code_its_requests_mapped_in() {
    let (dir, data, household) = set_up_household();
    let token = token_create(&data, &household, "owner@example.org", &[]);
    token.assert_success();
    let token = token.single_stdout_line().to_string();
    let port = free_port();
    let server = serve(&data, port, &dir.path().join("serve.log"));
    let pid = server.0.id();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("exe");

    let read = |path: &str, token: Option<&str>| {
        let response = http_get(port, path, token).expect("request");
        assert_eq!(response.status, 200, "{path}: {}", response.body);
    };
    for _ in 0..3 {
        read("/api/v1/openapi.json", None);
        read(
            &format!("/api/v1/households/{household}/people"),
            Some(&token),
        );
        read(
            &format!("/api/v1/households/{household}/medications"),
            Some(&token),
        );
        read("/", None);
    }
    let mapped = resident_code_kb(pid, &exe);

    // Quiet after half a second, handed back half a second later; the
    // deadline only bounds a failing run.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut now = mapped;
    while now * 2 > mapped && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        now = resident_code_kb(pid, &exe);
    }
    assert!(
        now * 2 <= mapped,
        "resident code after the requests {mapped} kB, once quiet {now} kB"
    );

    // Whatever serves the next request is mapped back in.
    read(
        &format!("/api/v1/households/{household}/medications"),
        Some(&token),
    );
    read("/api/v1/openapi.json", None);
}

/// The environment the process `pid` runs with, one `NAME=value` a line.
fn environment(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    raw.split(|b| *b == 0)
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .collect()
}

/// `pillbox serve` on `port` over `data` with `GLIBC_TUNABLES` as given
/// (`None`: unset).
fn serve_with_tunables(dir: &Path, data: &Path, port: u16, tunables: Option<&str>) -> Guard {
    serve_with(data, port, &dir.join(format!("serve-{port}.log")), |cmd| {
        cmd.env_remove("GLIBC_TUNABLES");
        if let Some(tunables) = tunables {
            cmd.env("GLIBC_TUNABLES", tunables);
        }
    })
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn serve_runs_without_the_allocators_per_thread_cache_unless_told_otherwise() {
    let (dir, data, _) = set_up_household();
    let port = free_port();
    let server = serve_with_tunables(dir.path(), &data, port, None);
    let pid = server.0.id();
    let env = environment(pid);
    assert!(
        env.iter()
            .any(|e| e == "GLIBC_TUNABLES=glibc.malloc.tcache_count=0"),
        "{env:?}"
    );
    // Started again in place: the same process, which answers.
    assert_eq!(
        http_get(port, "/api/v1/capabilities", None).unwrap().status,
        200
    );
    drop(server);

    let port = free_port();
    let server = serve_with_tunables(dir.path(), &data, port, Some("glibc.malloc.arena_max=4"));
    let env = environment(server.0.id());
    assert!(
        env.iter()
            .any(|e| e == "GLIBC_TUNABLES=glibc.malloc.arena_max=4"),
        "the administrator's setting stands: {env:?}"
    );
    assert!(!env.iter().any(|e| e.contains("tcache_count")), "{env:?}");
}

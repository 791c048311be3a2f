//! `pillbox serve`: the API server, stopped gracefully by SIGINT or SIGTERM.

use std::net::SocketAddr;

use super::common::CliResult;
use crate::config::{ServeArgs, Settings, load_native_push};
use crate::db::OpenMode;

pub async fn run(args: ServeArgs) -> CliResult {
    raise_open_file_limit();
    let dir = args.data.data_dir.clone();
    let readers = args.reader_threads;
    let db = tokio::task::spawn_blocking(move || {
        crate::db::Db::open_with_readers(&dir, OpenMode::Create, readers)
    })
    .await
    .map_err(|e| format!("cannot open the database: {e}"))?
    .map_err(|e| e.to_string())?;
    if let Some(line) = crate::db::private_files::exposure_warning(&args.data.data_dir) {
        tracing::warn!("{line}");
    }
    let listener = bind(&args.listen).await?;
    // Held until the process ends: `pillbox restore` (and a second server)
    // refuses while it is.
    let _running = crate::backup::lock(&args.data.data_dir)?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let mut settings = Settings::from(&args);
    load_native_push(&mut settings.reminders, &args)?;
    let reminders = crate::reminders::task::spawn(db.clone(), settings.reminders.clone())
        .await
        .map_err(|e| format!("cannot start reminders: {e}"))?;
    // Kept until shutdown: dropping it stops the sender.
    let _mail_sender = match settings.mail.clone() {
        Some(mail) => Some(crate::mail::start(db.clone(), mail)?),
        None => None,
    };
    let review_prompts = crate::reports::review_prompts::task::spawn(db.clone());
    let mut state = crate::app::state(db.clone(), settings);
    if let Some(dir) = &args.backup_dir {
        let status = std::sync::Arc::new(crate::backup::schedule::Status::enabled());
        state.insert(status.clone());
        let plan = crate::backup::schedule::Plan {
            data_dir: args.data.data_dir.clone(),
            dir: dir.clone(),
            interval: args.backup_interval,
            keep: args.backup_keep as usize,
        };
        tracing::info!(
            "scheduled backups every {}s into {}, keeping {}",
            plan.interval.as_secs(),
            plan.dir.display(),
            plan.keep
        );
        tokio::spawn(crate::backup::schedule::run(plan, status));
    }
    if !state.settings.public_url.is_configured()
        && let Some(given) = db
            .read(|conn| crate::db::instance::find(conn, crate::db::instance::PUBLIC_URL))
            .await
            .map_err(|e| format!("cannot read the database: {e}"))?
    {
        state.settings.public_url.remember(given);
    }
    let base = state
        .settings
        .public_url
        .get()
        .unwrap_or_else(|| format!("http://{local}"));
    let setup_link = state.part::<crate::web::setup_link::SetupLink>().clone();
    let app = crate::app::app(state);
    tracing::info!(
        "pillbox {} listening on http://{local} with data in {}",
        env!("CARGO_PKG_VERSION"),
        db.path().display()
    );
    // The one line that shows the token: whoever reads the server's log may
    // claim it, nobody else on the network.
    if local.ip().is_loopback() {
        tracing::info!(
            "only this computer can reach http://{local}; for phones and other computers, start with --listen 0.0.0.0:{}",
            local.port()
        );
    }
    // The last line of start-up, so that it is the one a newcomer sees.
    if let Some(link) = crate::web::setup::offer(&db, &setup_link, &base)
        .await
        .map_err(|e| format!("cannot read the database: {e}"))?
    {
        tracing::info!(
            "no household yet: open {link} in a browser to set Pillbox up (the link works once, until the server restarts)"
        );
    }
    let returns = tokio::spawn(return_free_memory(db.clone()));
    crate::http::server::serve(listener, app, args.connection_limits(), shutdown_signal()).await;
    tracing::info!("shutting down: finishing queued writes");
    returns.abort();
    reminders.abort();
    review_prompts.abort();
    db.close().await;
    Ok(())
}

/// A spell of the server's time: quiet when no request started in it and
/// nothing asked the database anything.
const SPELL: std::time::Duration = std::time::Duration::from_millis(500);

/// Hands memory back to the system (what and when: `memory::Returns`), so
/// that a server a household leaves alone most of the day holds little of
/// a small box's memory. The binary's code pages are the most of it: the
/// kernel maps them 64 KiB around each page touched, so start-up or a few
/// requests map in most of the binary. The next request maps back the
/// code it runs with minor faults from the file cache (no disk read while
/// the file is cached).
async fn return_free_memory(db: crate::db::Db) {
    use crate::memory::Return;
    // Work of any kind: requests, and the background tasks' reads and
    // writes (reminders, review prompts, mail, backups), which run code
    // and fill caches too.
    let work = || crate::http::server::requests_started().wrapping_add(db.jobs_asked());
    let heap_and_code = || {
        tokio::task::spawn_blocking(|| {
            crate::memory::return_free_memory();
            crate::memory::release_mapped_code();
        })
    };
    // Start-up is over: what only it ran goes at once.
    let _ = heap_and_code().await;
    let mut returns = crate::memory::Returns::after_start_up(work());
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + SPELL, SPELL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match returns.after_spell(work()) {
            Return::Nothing => {}
            // The readers and the writer let go at once, unless busy.
            Return::Caches => {
                db.release_idle_memory();
                let view = db.attached::<crate::auth::view::AccessView>();
                let _ = tokio::task::spawn_blocking(move || view.let_go()).await;
            }
            Return::CachesAndHeap => {
                db.release_memory();
                // Walks every arena: a blocking thread's work.
                let _ = tokio::task::spawn_blocking(crate::memory::return_free_memory).await;
            }
            Return::HeapAndCode => {
                let _ = heap_and_code().await;
            }
        }
    }
}

/// Each connection and each database connection is a file descriptor; a
/// soft limit of 1,024 (the usual default) is reached long before memory or
/// the connection cap would be. The hard limit is what the administrator
/// allows, so take all of it.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return;
    }
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if let Err(e) = setrlimit(Resource::Nofile, raised) {
        tracing::warn!("cannot raise the open-file limit: {e}");
    }
}

/// Binds `host:port`. A host name (localhost:8080) resolves; its IPv4
/// addresses are tried first, so `localhost` answers on 127.0.0.1 as people
/// expect whatever order the resolver returns.
async fn bind(listen: &str) -> CliResult<tokio::net::TcpListener> {
    let mut addrs: Vec<SocketAddr> = match listen
        .rsplit_once(':')
        .filter(|(host, _)| host.eq_ignore_ascii_case("localhost"))
        .and_then(|(_, port)| port.parse::<u16>().ok())
    {
        // Loopback without asking the resolver (RFC 6761), which a static
        // binary in a minimal container may not be able to load.
        Some(port) => vec![
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)),
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
        ],
        None => tokio::net::lookup_host(listen)
            .await
            .map_err(|e| {
                format!("cannot listen on {listen}: the host name does not resolve ({e})")
            })?
            .collect(),
    };
    addrs.sort_by_key(SocketAddr::is_ipv6);
    let mut last = None;
    for addr in addrs {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() == std::io::ErrorKind::AddrInUse => busy(listen),
        Some(e) => format!("cannot listen on {listen}: {e}"),
        None => format!("cannot listen on {listen}: the host name has no address"),
    })
}

/// The port is taken (often by a Pillbox already running): the one line
/// says which and how to choose another.
fn busy(listen: &str) -> String {
    let (host, port) = listen.rsplit_once(':').unwrap_or((listen, ""));
    let other = port
        .parse::<u16>()
        .map_or(8081, |p| p.wrapping_add(1).max(1));
    format!(
        "cannot listen on {listen}: port {port} on {host} is already in use (is Pillbox already running?); stop what uses it, or choose another port with --listen {host}:{other}"
    )
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {},
            _ = terminate.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

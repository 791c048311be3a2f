//! `pillbox serve`: the API server, stopped gracefully by SIGINT or SIGTERM.

use super::{CliResult, open_db};
use crate::config::{ServeArgs, Settings};
use crate::state::AppState;

pub async fn run(args: ServeArgs) -> CliResult {
    raise_open_file_limit();
    let db = open_db(&args.data).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let state = AppState::new(db.clone(), Settings::from(&args));
    let app = crate::http::app(state);
    tracing::info!(
        "pillbox {} listening on http://{local} with data in {}",
        env!("CARGO_PKG_VERSION"),
        db.path().display()
    );
    crate::http::server::serve(listener, app, args.connection_limits(), shutdown_signal()).await;
    tracing::info!("shutting down: finishing queued writes");
    db.close().await;
    Ok(())
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

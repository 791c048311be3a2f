//! The connection loop of `pillbox serve`. axum::serve keeps a connection
//! open for as long as the client likes, so a thousand clients that send
//! half a request line and then nothing use up the process's file
//! descriptors and deny service to everyone. Here every connection has a
//! header-read timeout (hyper's, which also runs while a kept-alive
//! connection waits for its next request), the same limit on each wait for
//! the next piece of a request body, an idle timeout, and a permit
//! from a fixed number: at the cap, new connections wait in the kernel's
//! accept queue until one closes, rather than taking descriptors the
//! database and the open connections need.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use http_body::Body as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt;

/// Limits of every connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time a client has to send a request's headers, from when the
    /// connection is ready for a request; also the longest wait for the
    /// next piece of a request body.
    pub header_read_timeout: Duration,
    /// A connection with no request started or answered for this long is
    /// closed (at once when idle, else after the answer in progress).
    pub idle_timeout: Duration,
    /// Connections served at once.
    pub max_connections: u32,
}

/// Requests started since the process began: work that waits for a quiet
/// moment (handing memory back) reads it.
static REQUESTS_STARTED: AtomicU64 = AtomicU64::new(0);

/// How many requests this process has started serving so far.
pub fn requests_started() -> u64 {
    REQUESTS_STARTED.load(Ordering::Relaxed)
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets every
/// open connection finish the request it is serving and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let max = limits.max_connections.max(1);
    let permits = Arc::new(Semaphore::new(max as usize));
    let (stop, stopping) = watch::channel(false);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of descriptors or memory: wait a moment instead of
                    // spinning on a listener that keeps failing.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        tokio::spawn(connection(
            stream,
            remote,
            app.clone(),
            builder.clone(),
            limits,
            stopping.clone(),
            permit,
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    // Each connection holds its permit until it ends.
    let _ = permits.acquire_many(max).await;
}

async fn connection(
    stream: TcpStream,
    remote: SocketAddr,
    app: Router,
    builder: http1::Builder,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let served_at = stream.local_addr().ok().map(super::origin::ServedAt);
    let body_timeout = limits.header_read_timeout;
    let opened = Instant::now();
    // Milliseconds after `opened` of the last request started or answered.
    let last_active = Arc::new(AtomicU64::new(0));
    let service = {
        let last_active = last_active.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            REQUESTS_STARTED.fetch_add(1, Ordering::Relaxed);
            mark_active(&last_active, opened);
            let read_to_end = Arc::new(AtomicBool::new(request.body().is_end_stream()));
            let body_read = read_to_end.clone();
            let mut request =
                request.map(|body| Body::new(TimedBody::new(body, body_timeout, body_read)));
            request.extensions_mut().insert(ConnectInfo(remote));
            if let Some(served_at) = served_at {
                request.extensions_mut().insert(served_at);
            }
            let app = app.clone();
            let last_active = last_active.clone();
            async move {
                let response = app.oneshot(request).await;
                mark_active(&last_active, opened);
                let mut response = match response {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                // An answer given before the body was read (a 401, 413 or
                // 415 that never looked at it) leaves the rest of that body
                // on the connection, where it would be read as the next
                // request: the connection ends with this answer instead.
                if !read_to_end.load(Ordering::Relaxed) {
                    response.headers_mut().insert(
                        axum::http::header::CONNECTION,
                        axum::http::HeaderValue::from_static("close"),
                    );
                }
                Ok::<_, Infallible>(response)
            }
        })
    };
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("connection closed: {e}");
                }
                break;
            }
            _ = stopping.wait_for(|stop| *stop), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            () = idle(&last_active, opened, limits.idle_timeout), if !closing => {
                // Closes an idle connection now; one mid-request answers first.
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

fn mark_active(last_active: &AtomicU64, opened: Instant) {
    let millis = u64::try_from(opened.elapsed().as_millis()).unwrap_or(u64::MAX);
    last_active.store(millis, Ordering::Relaxed);
}

/// Resolves once nothing has happened on the connection for `timeout`.
async fn idle(last_active: &AtomicU64, opened: Instant, timeout: Duration) {
    loop {
        let last = opened + Duration::from_millis(last_active.load(Ordering::Relaxed));
        let deadline = last + timeout;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

/// A request body whose every piece must arrive within `timeout` of the
/// handler asking for it: a client that sends its headers and then stalls
/// would otherwise hold its connection (and a handler) forever.
struct TimedBody {
    inner: Incoming,
    timeout: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    waiting: bool,
    /// Set once the body's end was read (the connection may serve another request).
    read_to_end: Arc<AtomicBool>,
}

impl TimedBody {
    fn new(inner: Incoming, timeout: Duration, read_to_end: Arc<AtomicBool>) -> TimedBody {
        TimedBody {
            inner,
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            waiting: false,
            read_to_end,
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.waiting = false;
                if frame.is_none() || this.inner.is_end_stream() {
                    this.read_to_end.store(true, Ordering::Relaxed);
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                if !this.waiting {
                    this.waiting = true;
                    let at = Instant::now() + this.timeout;
                    this.deadline.as_mut().reset(at);
                }
                match this.deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err("request body timed out".into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

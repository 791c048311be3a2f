//! Streamed JSON responses: a read runs on a pooled connection off the async
//! threads and writes its JSON through a bounded channel, so a large body
//! (a snapshot of years of takes) is sent while it is read and never held
//! in memory whole.
//!
//! Nothing is sent until the first 128 KiB are ready or the read finishes: a
//! read that fails before that answers with the ordinary error envelope. A
//! failure later (or a client that stops reading for `STALL_LIMIT`) can only
//! abort the body: the connection is cut before the final chunk, so the
//! client never sees a complete-looking response.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use rusqlite::Connection;
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::db::Db;
use crate::domain::json_object::write_error;
use crate::error::{ApiError, Result};

/// Bytes gathered before a chunk is handed to the connection.
const CHUNK: usize = 128 * 1024;
/// Chunks waiting for a slow client before the reader pauses.
const CHUNKS_IN_FLIGHT: usize = 4;
/// A client that takes no chunk for this long is given up on: a stalled
/// download must not hold one of the few read connections for ever.
const STALL_LIMIT: Duration = Duration::from_secs(60);

/// An `io::Write` that sends full chunks down the response channel; it
/// blocks (on the blocking-pool thread) while the client is behind, for at
/// most `STALL_LIMIT` per chunk.
struct ChunkWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Bytes>,
    runtime: Handle,
    sent_any: bool,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.sent_any = true;
        match self
            .runtime
            .block_on(tokio::time::timeout(STALL_LIMIT, self.tx.send(chunk)))
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "client went away",
            )),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading",
            )),
        }
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes).map(drop)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Answers 200 with the JSON that `write` produces on a read connection.
pub async fn json<F>(db: &Db, write: F) -> Result<Response>
where
    F: FnOnce(&Connection, &mut dyn Write) -> Result<()> + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Bytes>(CHUNKS_IN_FLIGHT);
    // Set only once the last byte has been handed over: a stream that ends
    // without it is aborted, never finished as if it were complete.
    let complete = Arc::new(AtomicBool::new(false));
    let runtime = Handle::current();
    let db = db.clone();
    let finished = complete.clone();
    let task = tokio::spawn(async move {
        db.read(move |conn| {
            let mut out = ChunkWriter {
                buf: Vec::with_capacity(CHUNK),
                tx,
                runtime,
                sent_any: false,
            };
            let result = write(conn, &mut out).and_then(|()| out.send().map_err(write_error));
            match &result {
                Ok(()) => finished.store(true, Ordering::Release),
                Err(_) if out.tx.is_closed() => {
                    tracing::debug!("streamed response abandoned by the client");
                }
                Err(err) if out.sent_any => {
                    tracing::error!(error = %err, "streamed response failed after it started");
                }
                Err(_) => {}
            }
            result
        })
        .await
    });
    let first = match rx.recv().await {
        Some(chunk) => chunk,
        // The read ended without sending a byte: it failed (or wrote nothing).
        None => {
            task.await
                .map_err(|e| ApiError::internal(format!("read task: {e}")))??;
            Bytes::new()
        }
    };
    let rest = futures_util::stream::unfold(Some(rx), move |rx| {
        let complete = complete.clone();
        async move {
            let mut rx = rx?;
            match rx.recv().await {
                Some(chunk) => Some((Ok(chunk), Some(rx))),
                None if complete.load(Ordering::Acquire) => None,
                None => Some((Err(io::Error::other("response ended early")), None)),
            }
        }
    });
    let first = futures_util::stream::once(async { Ok::<_, io::Error>(first) });
    let body = futures_util::StreamExt::chain(first, rest);
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::json_object::JsonObject;
    use http_body_util::BodyExt;

    async fn body_of(response: Response) -> std::result::Result<Vec<u8>, axum::Error> {
        Ok(response.into_body().collect().await?.to_bytes().to_vec())
    }

    #[tokio::test]
    async fn large_bodies_arrive_whole_and_early_failures_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();

        // Several chunks, complete.
        let response = json(&db, |_, out| {
            let mut top = JsonObject::begin(out)?;
            top.array("xs", |sink| (0..200_000).try_for_each(&mut *sink))?;
            top.end()
        })
        .await
        .unwrap();
        let body = body_of(response).await.unwrap();
        assert!(body.len() > 3 * CHUNK);
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["xs"].as_array().unwrap().len(), 200_000);

        // A failure before the first chunk is the ordinary error.
        let failed = json(&db, |_, out| {
            out.write_all(b"{").map_err(write_error)?;
            Err(ApiError::not_found("person"))
        })
        .await;
        assert!(matches!(failed, Err(ApiError::NotFound(_))));

        // A failure after chunks went out aborts the body instead of ending it.
        let response = json(&db, |_, out| {
            out.write_all(&vec![b' '; 3 * CHUNK]).map_err(write_error)?;
            Err(ApiError::internal("disk went away"))
        })
        .await
        .unwrap();
        assert!(body_of(response).await.is_err());
        db.close().await;
    }

    #[test]
    fn objects_nest_and_arrays_stream() {
        let mut out = Vec::new();
        let mut top = JsonObject::begin(&mut out).unwrap();
        top.field("a", &1).unwrap();
        let mut inner = top.object("b").unwrap();
        inner
            .array("xs", |sink| (1..=3).try_for_each(&mut *sink))
            .unwrap();
        inner
            .array("none", |_: &mut dyn FnMut(i32) -> Result<()>| Ok(()))
            .unwrap();
        inner.end().unwrap();
        top.field("c", "\"q\"").unwrap();
        top.end().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, r#"{"a":1,"b":{"xs":[1,2,3],"none":[]},"c":"\"q\""}"#);
        let _: serde_json::Value = serde_json::from_str(&text).unwrap();
    }
}

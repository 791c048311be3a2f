//! The background task: scan, deliver, then sleep until the next thing
//! falls due (a reminder, a retry) or household data changes.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::Clock;
use super::deliver::Deliverer;
use super::engine::{self, Scan};
use crate::db::Db;
use crate::error::Result;
use crate::reminders::settings::ReminderSettings;

/// The longest sleep: a grant that expires or a new day is noticed within it.
const LONGEST_SLEEP: SignedDuration = SignedDuration::from_mins(15);
/// Writes come in bursts (a sync batch, an import); one scan follows them.
const SETTLE: Duration = Duration::from_millis(300);
/// After a failed pass, wait before the next.
const AFTER_ERROR: SignedDuration = SignedDuration::from_secs(30);

/// Everything the task uses.
pub struct Reminders {
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub settings: ReminderSettings,
    pub deliverer: Deliverer,
}

impl Reminders {
    pub async fn new(
        db: Db,
        clock: Arc<dyn Clock>,
        settings: ReminderSettings,
    ) -> Result<Reminders> {
        let deliverer = Deliverer::new(&db, settings.clone()).await?;
        Ok(Reminders {
            db,
            clock,
            settings,
            deliverer,
        })
    }

    /// Queues what fell due up to the clock's now.
    pub async fn scan(&self) -> Result<Scan> {
        let now = self.clock.now();
        let settings = self.settings.clone();
        self.db
            .write(move |tx| engine::scan(tx, now, &settings))
            .await
    }

    /// Delivers every queued notification that is due at the clock's now.
    pub async fn deliver(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let handled = self
                .deliverer
                .deliver_due(&self.db, self.clock.now())
                .await?;
            total += handled;
            if handled == 0 {
                return Ok(total);
            }
        }
    }

    /// One pass: scan, deliver; when to wake next.
    pub async fn pass(&self) -> Result<Timestamp> {
        let scan = self.scan().await?;
        self.deliver().await?;
        let retry = self.db.read(super::outbox_store::next_attempt).await?;
        let now = self.clock.now();
        let mut wake = now + LONGEST_SLEEP;
        if let Some(due) = scan.next_due {
            wake = wake.min(due);
        }
        if let Some(retry) = retry {
            wake = wake.min(retry.to_jiff());
        }
        Ok(wake.max(now))
    }

    /// Runs until the process stops.
    pub async fn run(self) {
        let mut changes = self.db.changes();
        loop {
            let wake = match self.pass().await {
                Ok(wake) => wake,
                Err(e) => {
                    tracing::warn!("reminders: {e}");
                    self.clock.now() + AFTER_ERROR
                }
            };
            let sleep = self
                .clock
                .now()
                .duration_until(wake)
                .max(SignedDuration::ZERO);
            let sleep = Duration::try_from(sleep).unwrap_or(Duration::ZERO);
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tokio::time::sleep(SETTLE).await;
                    changes.borrow_and_update();
                }
            }
        }
    }
}

/// Starts the task beside the server.
pub async fn spawn(db: Db, settings: ReminderSettings) -> Result<tokio::task::JoinHandle<()>> {
    let reminders = Reminders::new(db, Arc::new(super::SystemClock), settings).await?;
    Ok(tokio::spawn(reminders.run()))
}

//! Email through SMTP (lettre with rustls, STARTTLS or TLS as the URL says):
//! messages are queued in the `mail_outbox` table inside the transaction
//! that causes them, and a background task sends them with retries and
//! exponential back-off, so no request waits on the mail server and a
//! restart loses nothing queued.

pub mod store;

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::db::{Db, WriteTx};
use crate::domain::Timestamp;
use crate::error::Result;

/// Where mail goes: `smtp_url` as lettre reads it (`smtps://` for TLS,
/// `smtp://…?tls=required` for STARTTLS, `smtp://` plain for a local relay).
#[derive(Debug, Clone)]
pub struct MailSettings {
    pub smtp_url: String,
    pub from: String,
    /// A PEM file of the certificate authority the SMTP server's certificate
    /// is issued by, when that is a private one (a home server's own CA or a
    /// self-signed certificate); trusted beside the public roots.
    pub ca_file: Option<std::path::PathBuf>,
}

/// One message for the outbox.
pub struct Email<'a> {
    pub to: &'a str,
    pub subject: &'a str,
    pub text: &'a str,
    pub html: &'a str,
}

/// Whether an SMTP server is configured (the root put its settings in):
/// links then go by email, never back to the caller.
pub fn configured(state: &crate::state::AppState) -> bool {
    state.try_part::<MailSettings>().is_some()
}

pub fn enqueue(conn: &WriteTx, email: &Email<'_>) -> Result<i64> {
    store::insert(conn, email.to, email.subject, email.text, email.html)
}

const POLL: Duration = Duration::from_millis(500);
const BATCH: i64 = 20;
/// The longest wait between two attempts at one message.
const MAX_BACKOFF_SECS: i64 = 3600;

fn backoff(attempts: i64) -> jiff::SignedDuration {
    let secs = 1i64 << attempts.clamp(0, 12);
    jiff::SignedDuration::from_secs(secs.min(MAX_BACKOFF_SECS))
}

/// The running sender; dropping it stops the task.
pub struct Sender(tokio::task::JoinHandle<()>);

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the background sender. Fails only on a URL lettre cannot read.
pub fn start(db: Db, settings: MailSettings) -> std::result::Result<Sender, String> {
    let transport = transport(&settings)?;
    let from: Mailbox = settings
        .from
        .parse()
        .map_err(|e| format!("the mail sender address is not an email address: {e}"))?;
    Ok(Sender(tokio::spawn(run(db, transport, from))))
}

/// The SMTP transport the URL describes, trusting the configured private
/// certificate authority too when there is one.
fn transport(
    settings: &MailSettings,
) -> std::result::Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let unusable =
        |e: &dyn std::fmt::Display| format!("PILLBOX_SMTP_URL is not a usable SMTP URL: {e}");
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(&settings.smtp_url)
        .map_err(|e| unusable(&e))?
        .timeout(Some(Duration::from_secs(30)));
    if let Some(path) = &settings.ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("cannot read the SMTP CA file {}: {e}", path.display()))?;
        let certificate = Certificate::from_pem(&pem).map_err(|e| {
            format!(
                "the SMTP CA file {} is not a PEM certificate: {e}",
                path.display()
            )
        })?;
        let url = reqwest::Url::parse(&settings.smtp_url).map_err(|e| unusable(&e))?;
        let host = url
            .host_str()
            .ok_or_else(|| unusable(&"it names no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let parameters = TlsParameters::builder(host)
            .add_root_certificate(certificate)
            .build_rustls()
            .map_err(|e| format!("cannot set up TLS for SMTP: {e}"))?;
        let mode = url
            .query_pairs()
            .find(|(name, _)| name == "tls")
            .map(|(_, value)| value.into_owned());
        let tls = match (url.scheme(), mode.as_deref()) {
            ("smtps", _) => Tls::Wrapper(parameters),
            ("smtp", Some("required")) => Tls::Required(parameters),
            ("smtp", Some("opportunistic")) => Tls::Opportunistic(parameters),
            _ => {
                return Err("PILLBOX_SMTP_CA_FILE needs a TLS connection: an smtps:// URL, or smtp://…?tls=required".into());
            }
        };
        builder = builder.tls(tls);
    }
    Ok(builder.build())
}

async fn run(db: Db, transport: AsyncSmtpTransport<Tokio1Executor>, from: Mailbox) {
    loop {
        match db.read(|conn| store::due(conn, BATCH)).await {
            Ok(due) => {
                for message in due {
                    deliver(&db, &transport, &from, message).await;
                }
            }
            Err(e) => tracing::warn!("cannot read the mail outbox: {e}"),
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn deliver(
    db: &Db,
    transport: &AsyncSmtpTransport<Tokio1Executor>,
    from: &Mailbox,
    queued: store::Queued,
) {
    let id = queued.id;
    let outcome = match build(from, &queued) {
        Ok(message) => transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let recorded = match outcome {
        Ok(()) => db.write(move |tx| store::mark_sent(tx, id)).await,
        Err(error) => {
            // The error names the server's answer, never the message's content.
            tracing::warn!(
                mail_id = id,
                attempts = queued.attempts + 1,
                "mail not sent: {error}"
            );
            let next = Timestamp::now().plus(backoff(queued.attempts));
            db.write(move |tx| store::mark_failed(tx, id, &next, &error))
                .await
        }
    };
    if let Err(e) = recorded {
        tracing::warn!(mail_id = id, "cannot record a mail attempt: {e}");
    }
}

fn build(from: &Mailbox, queued: &store::Queued) -> std::result::Result<Message, String> {
    let to: Mailbox = queued
        .recipient
        .parse()
        .map_err(|e| format!("bad recipient: {e}"))?;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(queued.subject.clone())
        .multipart(MultiPart::alternative_plain_html(
            queued.text_body.clone(),
            queued.html_body.clone(),
        ))
        .map_err(|e| e.to_string())
}

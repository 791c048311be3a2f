//! Mail over TLS (issue 13, point 4): the outbox's sender talks STARTTLS
//! to an SMTP server (mailin, a real SMTP implementation, with rustls)
//! whose certificate is issued by a private CA the server is told to trust.
//! The certificates are fixtures made with openssl (fixtures/smtp_tls: a CA
//! valid for 100 years and a server certificate for 127.0.0.1 it signed).

use std::path::PathBuf;

use serde_json::json;

use crate::invitations::{Sink, wait_for};
use crate::support::TestApp;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/api/fixtures/smtp_tls")
        .join(name)
}

/// A STARTTLS-only sink with the fixture's server certificate.
fn start_tls_sink() -> (Sink, u16) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sink = Sink::default();
    let mut server = mailin_embedded::Server::new(sink.clone());
    server
        .with_tcp_listener(listener)
        .with_num_threads(2)
        .with_ssl(mailin_embedded::SslConfig::SelfSigned {
            cert_path: fixture("server.pem").display().to_string(),
            key_path: fixture("server.key").display().to_string(),
        })
        .unwrap();
    std::thread::spawn(move || {
        let _ = server.serve();
    });
    (sink, port)
}

async fn queue_invitation(app: &TestApp, email: &str) {
    app.post(
        &app.hh("/admin/invitations"),
        &app.owner,
        json!({"household_invitation": {
            "email": email,
            "role": "member",
            "person": {"name": "Tess Tls", "date_of_birth": "1990-01-01"},
        }}),
    )
    .await
    .assert_status(201);
}

async fn last_error(app: &TestApp) -> Option<String> {
    app.db
        .read(|c| {
            Ok(c.query_row(
                "SELECT last_error FROM mail_outbox ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn mail_goes_over_starttls_to_a_server_whose_private_ca_is_configured() {
    let (sink, port) = start_tls_sink();
    let mail = pillbox::mail::MailSettings {
        smtp_url: format!("smtp://127.0.0.1:{port}?tls=required"),
        from: "Pillbox <pillbox@example.org>".into(),
        ca_file: Some(fixture("ca.pem")),
    };
    let app = TestApp::with_settings(pillbox::config::Settings {
        rate_limit_per_minute: 0,
        mail: Some(mail.clone()),
        ..pillbox::config::Settings::default()
    })
    .await;
    let _sender = pillbox::mail::start(app.db.clone(), mail).unwrap();
    queue_invitation(&app, "tls@example.org").await;
    wait_for("delivery over STARTTLS", async || {
        !sink.messages.lock().unwrap().is_empty()
    })
    .await;
    let message = sink.messages.lock().unwrap()[0].clone();
    assert!(message.contains("tls@example.org"));
    assert!(message.contains("text/plain") && message.contains("text/html"));
}

#[tokio::test]
async fn without_the_ca_the_certificate_is_refused_and_the_mail_waits() {
    let (sink, port) = start_tls_sink();
    let mail = pillbox::mail::MailSettings {
        smtp_url: format!("smtp://127.0.0.1:{port}?tls=required"),
        from: "Pillbox <pillbox@example.org>".into(),
        ca_file: None,
    };
    let app = TestApp::with_settings(pillbox::config::Settings {
        rate_limit_per_minute: 0,
        mail: Some(mail.clone()),
        ..pillbox::config::Settings::default()
    })
    .await;
    let _sender = pillbox::mail::start(app.db.clone(), mail).unwrap();
    queue_invitation(&app, "untrusted@example.org").await;
    wait_for("a refused attempt", async || {
        last_error(&app).await.is_some()
    })
    .await;
    assert!(sink.messages.lock().unwrap().is_empty());

    // A CA file with a URL that does not ask for TLS is a start-up error.
    let plain = pillbox::mail::MailSettings {
        smtp_url: format!("smtp://127.0.0.1:{port}"),
        from: "Pillbox <pillbox@example.org>".into(),
        ca_file: Some(fixture("ca.pem")),
    };
    let refused = pillbox::mail::start(app.db.clone(), plain)
        .err()
        .expect("refused");
    assert!(refused.contains("tls=required"), "{refused}");
}

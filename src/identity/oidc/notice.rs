//! The emails that tell an account an identity-provider identity was
//! linked to it or removed from it, queued in the transaction that does it,
//! so that a link the owner did not make is noticed.

use crate::db::WriteTx;
use crate::error::Result;
use crate::identity::sign_in::page::escape;

fn send(tx: &WriteTx, account_id: i64, subject: &str, lines: &[String]) -> Result<()> {
    let to = crate::auth::accounts::email_of(tx, account_id)?;
    let text = format!("{}\n", lines.join("\n\n"));
    let html = format!(
        "<!doctype html><html lang=\"en\"><body>{}</body></html>",
        lines
            .iter()
            .map(|l| format!("<p>{}</p>", escape(l)))
            .collect::<String>()
    );
    crate::mail::enqueue(
        tx,
        &crate::mail::Email {
            to: &to,
            subject,
            text: &text,
            html: &html,
        },
    )?;
    Ok(())
}

fn when_and_where(address: &str) -> String {
    format!(
        "This happened at {} (UTC) from the address {address}.",
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M")
    )
}

pub fn linked(tx: &WriteTx, account_id: i64, label: &str, address: &str) -> Result<()> {
    send(
        tx,
        account_id,
        "A sign-in identity was linked to your Pillbox account",
        &[
            format!(
                "The identity {label} of your identity provider was linked to your Pillbox account. From now on it signs in as you."
            ),
            when_and_where(address),
            "If this was not you, remove it under Account, Linked sign-ins, and change your password.".into(),
        ],
    )
}

pub fn unlinked(tx: &WriteTx, account_id: i64, label: &str, address: &str) -> Result<()> {
    send(
        tx,
        account_id,
        "A sign-in identity was removed from your Pillbox account",
        &[
            format!(
                "The identity {label} of your identity provider no longer signs in to your Pillbox account."
            ),
            when_and_where(address),
            "If this was not you, change your password and check your account's sessions.".into(),
        ],
    )
}

//! `pillbox account password|reset-mfa`: the host operator helps a member
//! who is locked out. Both work while the server runs; the next request
//! sees the change.

use clap::{Args, Subcommand};

use super::common::{CliResult, open_db};
use super::password;
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::identity::operator;

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Set an account's password (from stdin or a double prompt); every signed-in device is signed out and every app token of the account revoked
    Password(AccountArgs),
    /// Remove an account's second factor (TOTP and recovery codes) so its owner can sign in with the password alone
    ResetMfa(AccountArgs),
}

#[derive(Debug, Args)]
pub struct AccountArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Email address of the account (any letter case)
    #[arg(long)]
    pub email: String,
}

pub async fn run(command: AccountCommand) -> CliResult {
    match command {
        AccountCommand::Password(args) => set_password(args).await,
        AccountCommand::ResetMfa(args) => reset_mfa(args).await,
    }
}

async fn set_password(args: AccountArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    // Refuse an unknown email before asking for a password.
    let email = args.email.clone();
    let known = db
        .read(move |conn| crate::auth::accounts::find_by_email(conn, email.trim()))
        .await
        .map_err(|e| e.to_string())?;
    if known.is_none() {
        db.close().await;
        return Err(format!("no account has the email {}", args.email.trim()));
    }
    let entered = match password::read_new_password() {
        Ok(entered) => entered,
        Err(e) => {
            db.close().await;
            return Err(e);
        }
    };
    let hash = password::hash(entered).await?;
    let email = args.email.clone();
    // The old password may be what leaked, and whoever held it could have
    // made app tokens with it: those end with the sessions.
    let result = db
        .write(move |tx| {
            let ended = operator::set_password(tx, &email, &hash)?;
            let account_id = operator::account_by_email(tx, &email)?;
            let tokens = crate::household::app_tokens::revoke_all_of_account(
                tx,
                account_id,
                "password_reset",
            )?;
            Ok((ended, tokens))
        })
        .await;
    db.close().await;
    let (ended, tokens) = result.map_err(|e| e.to_string())?;
    eprintln!(
        "Password of {} changed; {ended} signed-in session(s) signed out and {tokens} app token(s) revoked",
        args.email.trim()
    );
    Ok(())
}

async fn reset_mfa(args: AccountArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let email = args.email.clone();
    let result = db.write(move |tx| operator::reset_mfa(tx, &email)).await;
    db.close().await;
    let removed = result.map_err(|e| e.to_string())?;
    if removed {
        eprintln!(
            "Two-step verification of {} is off; they sign in with their password and can enrol again",
            args.email.trim()
        );
    } else {
        eprintln!(
            "{} had no two-step verification; nothing changed",
            args.email.trim()
        );
    }
    Ok(())
}

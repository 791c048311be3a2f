//! `pillbox token create|list|revoke`: household app tokens. A new token is
//! printed alone on stdout so scripts can capture it; it is never shown
//! again (only its hash is stored), and lists show its public prefix.

use std::collections::HashMap;

use clap::{Args, Subcommand};

use super::common::{CliResult, all_pages, open_db};
use super::output::print_table;
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::error::ApiError;
use crate::household::app_tokens::{self, TokenRequest};
use crate::household::{self, memberships};

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an app token for a member and print it (shown this once only)
    Create(CreateArgs),
    /// List the household's live app tokens (never their secrets)
    List(ListArgs),
    /// Revoke an app token at once (its id is in `pillbox token list`)
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household
    #[arg(long)]
    pub household: i64,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household
    #[arg(long)]
    pub household: i64,
    /// Numeric id of the token, from `pillbox token list`
    #[arg(long)]
    pub id: i64,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household
    #[arg(long)]
    pub household: i64,
    /// Email address of the member the token acts as
    #[arg(long)]
    pub email: String,
    /// A name to recognise the token by
    #[arg(long)]
    pub name: String,
    /// Days until it expires (default and maximum: the household's app token maximum age)
    #[arg(long)]
    pub max_age_days: Option<i64>,
}

pub async fn run(command: TokenCommand) -> CliResult {
    match command {
        TokenCommand::Create(args) => create(args).await,
        TokenCommand::List(args) => list(args).await,
        TokenCommand::Revoke(args) => revoke(args).await,
    }
}

async fn create(args: CreateArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let result = db
        .write(move |conn| {
            let membership_id =
                memberships::store::active_by_email(conn, args.household, args.email.trim())?
                    .ok_or_else(|| {
                        crate::error::ApiError::NotFound(format!(
                            "no active member with the email {} in household {}",
                            args.email.trim(),
                            args.household
                        ))
                    })?;
            app_tokens::issue(
                conn,
                &TokenRequest {
                    household_id: args.household,
                    membership_id,
                    name: &args.name,
                    max_age_days: args.max_age_days,
                    issued_by: None,
                },
            )
        })
        .await;
    db.close().await;
    let created = result.map_err(|e| e.to_string())?;
    println!("{}", created.token);
    Ok(())
}

async fn list(args: ListArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let household_id = args.household;
    let result = db
        .read(move |conn| {
            if !household::store::exists(conn, household_id)? {
                return Err(ApiError::NotFound(format!(
                    "there is no household {household_id} (see `pillbox household list`)"
                )));
            }
            let emails: HashMap<i64, String> =
                all_pages(|page| memberships::store::list(conn, household_id, page))?
                    .into_iter()
                    .map(|m| (m.id, m.email))
                    .collect();
            let tokens = all_pages(|page| app_tokens::store::list_live(conn, household_id, page))?;
            Ok((tokens, emails))
        })
        .await;
    db.close().await;
    let (tokens, emails) = result.map_err(|e| e.to_string())?;
    print_table(
        &[
            "ID",
            "NAME",
            "MEMBER",
            "PREFIX",
            "CREATED",
            "EXPIRES",
            "LAST USED",
        ],
        tokens
            .into_iter()
            .map(|t| {
                vec![
                    t.id.to_string(),
                    t.name,
                    emails
                        .get(&t.membership_id)
                        .cloned()
                        .unwrap_or_else(|| format!("membership {}", t.membership_id)),
                    t.token_prefix,
                    t.created_at.into(),
                    t.expires_at.into(),
                    t.last_used_at.map_or_else(|| "never".into(), String::from),
                ]
            })
            .collect(),
    );
    Ok(())
}

async fn revoke(args: RevokeArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let (household_id, id) = (args.household, args.id);
    let result = db
        .write(move |conn| app_tokens::revoke_in(conn, household_id, id, None))
        .await;
    db.close().await;
    result.map_err(|e| e.to_string())?;
    eprintln!("Revoked app token {id} of household {household_id}");
    Ok(())
}

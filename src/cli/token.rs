//! `pillbox token create`: a household app token for a member, printed alone
//! on stdout so scripts can capture it.

use clap::{Args, Subcommand};

use super::{CliResult, open_db};
use crate::config::DataDirArgs;
use crate::household::app_tokens::{self, TokenRequest};
use crate::household::memberships;

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an app token for a member and print it
    Create(CreateArgs),
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
    let TokenCommand::Create(args) = command;
    let db = open_db(&args.data).await?;
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

//! `pillbox member add`: another account in an existing household.

use clap::{Args, Subcommand, ValueEnum};

use super::{CliResult, open_db, password};
use crate::auth::Role;
use crate::config::DataDirArgs;
use crate::household::{self, NewMember};

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Create an account and its membership (password from stdin or a prompt)
    Add(AddArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MemberRole {
    Administrator,
    Member,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household (printed by setup)
    #[arg(long)]
    pub household: i64,
    /// Email address of the new account
    #[arg(long)]
    pub email: String,
    /// Role in the household
    #[arg(long, value_enum)]
    pub role: MemberRole,
    /// Also create the member's own person with this name
    #[arg(long)]
    pub name: Option<String>,
}

pub async fn run(command: MemberCommand) -> CliResult {
    let MemberCommand::Add(args) = command;
    let password = password::read_new_password()?;
    let password_hash = password::hash(password).await?;
    let db = open_db(&args.data).await?;
    let role = match args.role {
        MemberRole::Administrator => Role::Administrator,
        MemberRole::Member => Role::Member,
    };
    let result = db
        .write(move |conn| {
            household::add_member(
                conn,
                args.household,
                &NewMember {
                    email: args.email.trim(),
                    password_hash: &password_hash,
                    person_name: args.name.as_deref(),
                    role,
                },
            )
        })
        .await;
    db.close().await;
    let membership_id = result.map_err(|e| e.to_string())?;
    println!("{membership_id}");
    Ok(())
}

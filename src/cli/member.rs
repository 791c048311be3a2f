//! `pillbox member add|list|role|remove`: the household's members, from the
//! server's shell. They work while the server runs: it reads memberships
//! at every request, so a change takes effect with the next one.

use clap::{Args, Subcommand, ValueEnum};
use rusqlite::Connection;

use super::common::{CliResult, all_pages, open_db};
use super::name;
use super::output::print_table;
use super::password;
use crate::auth::Role;
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::error::{ApiError, Result};
use crate::household::memberships::{self, model::Membership};
use crate::household::{self, NewMember, people};

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Create an account, its membership and the member's own person (password from stdin or a prompt)
    Add(AddArgs),
    /// List the household's members (removed members are not listed)
    List(ListArgs),
    /// Change a member's role; the household always keeps an active owner
    Role(RoleArgs),
    /// Remove a member, revoking their app tokens, access grants and pending invitations at once
    Remove(RemoveArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MemberRole {
    Administrator,
    Member,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AnyRole {
    Owner,
    Administrator,
    Member,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household (printed by setup; see `pillbox household list`)
    #[arg(long)]
    pub household: i64,
    /// Email address of the new account
    #[arg(long)]
    pub email: String,
    /// Role in the household
    #[arg(long, value_enum)]
    pub role: MemberRole,
    /// The member's own name, for their person in the household (asked for when omitted in a terminal)
    #[arg(long)]
    pub name: Option<String>,
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
pub struct RoleArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household
    #[arg(long)]
    pub household: i64,
    /// Email address of the member
    #[arg(long)]
    pub email: String,
    /// The new role
    #[arg(long, value_enum)]
    pub role: AnyRole,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Numeric id of the household
    #[arg(long)]
    pub household: i64,
    /// Email address of the member
    #[arg(long)]
    pub email: String,
}

pub async fn run(command: MemberCommand) -> CliResult {
    match command {
        MemberCommand::Add(args) => add(args).await,
        MemberCommand::List(args) => list(args).await,
        MemberCommand::Role(args) => role(args).await,
        MemberCommand::Remove(args) => remove(args).await,
    }
}

async fn add(args: AddArgs) -> CliResult {
    let email = args.email.trim().to_string();
    if !people::plausible_email(&email) {
        return Err("--email must be an email address".into());
    }
    let person_name = name::person_name(args.name.clone(), "The member's name (their own person)")?;
    let password = password::read_new_password()?;
    let password_hash = password::hash(password).await?;
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let role = match args.role {
        MemberRole::Administrator => Role::Administrator,
        MemberRole::Member => Role::Member,
    };
    let said = (email.clone(), person_name.trim().to_string());
    let result = db
        .write(move |conn| {
            household::add_member(
                conn,
                args.household,
                &NewMember {
                    email: &email,
                    password_hash: &password_hash,
                    person_name: &person_name,
                    role,
                },
            )
        })
        .await;
    db.close().await;
    let membership_id = result.map_err(|e| e.to_string())?;
    println!("{membership_id}");
    eprintln!(
        "Added {} to household {} as {} (membership {membership_id}), with their own person \"{}\". They sign in with this email and password.",
        said.0,
        args.household,
        role.as_str(),
        said.1
    );
    Ok(())
}

fn require_household(conn: &Connection, household_id: i64) -> Result<()> {
    if household::store::exists(conn, household_id)? {
        Ok(())
    } else {
        Err(ApiError::NotFound(format!(
            "there is no household {household_id} (see `pillbox household list`)"
        )))
    }
}

fn all_members(conn: &Connection, household_id: i64) -> Result<Vec<Membership>> {
    require_household(conn, household_id)?;
    all_pages(|page| memberships::store::list(conn, household_id, page))
}

/// The member with this email (any letter case), not yet removed.
fn by_email(conn: &Connection, household_id: i64, email: &str) -> Result<Membership> {
    all_members(conn, household_id)?
        .into_iter()
        .find(|m| m.email.eq_ignore_ascii_case(email.trim()))
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no member with the email {} in household {household_id}",
                email.trim()
            ))
        })
}

async fn list(args: ListArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let household_id = args.household;
    let result = db.read(move |conn| all_members(conn, household_id)).await;
    db.close().await;
    let members = result.map_err(|e| e.to_string())?;
    print_table(
        &["ID", "EMAIL", "ROLE", "STATUS", "PERSON", "NAME"],
        members
            .into_iter()
            .map(|m| {
                vec![
                    m.id.to_string(),
                    m.email,
                    m.role.as_str().to_string(),
                    m.status.as_str().to_string(),
                    m.person_id.map_or_else(|| "-".into(), |id| id.to_string()),
                    m.display_name.unwrap_or_else(|| "-".into()),
                ]
            })
            .collect(),
    );
    Ok(())
}

async fn role(args: RoleArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let role = match args.role {
        AnyRole::Owner => Role::Owner,
        AnyRole::Administrator => Role::Administrator,
        AnyRole::Member => Role::Member,
    };
    let result = db
        .write(move |conn| {
            let member = by_email(conn, args.household, &args.email)?;
            memberships::operator::set_role(conn, args.household, member.id, role)
        })
        .await;
    db.close().await;
    let member = result.map_err(|e| e.to_string())?;
    eprintln!(
        "{} is now {} of household {}",
        member.email,
        member.role.as_str(),
        member.household_id
    );
    Ok(())
}

async fn remove(args: RemoveArgs) -> CliResult {
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let result = db
        .write(move |conn| {
            let member = by_email(conn, args.household, &args.email)?;
            memberships::operator::remove_member(conn, args.household, member.id)?;
            Ok(member)
        })
        .await;
    db.close().await;
    let member = result.map_err(|e| e.to_string())?;
    eprintln!(
        "Removed {} from household {}; their app tokens, access grants and pending invitations are revoked",
        member.email, member.household_id
    );
    Ok(())
}

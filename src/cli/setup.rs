//! `pillbox setup`: a household, its owner and the owner's own person.

use clap::Args;

use super::common::{CliResult, open_db};
use super::name;
use super::password;
use crate::auth::Role;
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::error::ApiError;
use crate::household::{self, NewMember, people};

#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Name of the household
    #[arg(long)]
    pub household: String,
    /// Email address of the owner account
    #[arg(long)]
    pub email: String,
    /// IANA time zone of the household (default: this machine's, else UTC)
    #[arg(long)]
    pub time_zone: Option<String>,
    /// The owner's own name, for their person in the household (asked for when omitted in a terminal)
    #[arg(long)]
    pub name: Option<String>,
    /// The address phones and other computers will open Pillbox at (for links), e.g. http://raspberrypi.local:8080; `serve --public-url` goes before it
    #[arg(long, value_parser = crate::config::public_url)]
    pub public_url: Option<String>,
    /// Create a further household although this data directory already has one
    #[arg(long)]
    pub another_household: bool,
}

pub async fn run(args: SetupArgs) -> CliResult {
    let time_zone = args
        .time_zone
        .clone()
        .unwrap_or_else(crate::domain::time_zone::system_time_zone);
    // The operator typed it, so naming it back is help, not a leak (the API never echoes it).
    household::check_time_zone(&time_zone)
        .map_err(|_| format!("time zone {time_zone} is not a known IANA time zone name"))?;
    let email = args.email.trim().to_string();
    // Checked before the data directory is created, so a typo leaves nothing behind.
    if !people::plausible_email(&email) {
        return Err("--email must be an email address".into());
    }
    if args.household.trim().is_empty() {
        return Err("--household must not be blank".into());
    }
    let person_name = name::person_name(args.name.clone(), "Your name (the owner's own person)")?;
    let password = password::read_new_password()?;
    let password_hash = password::hash(password).await?;
    let db = open_db(&args.data, OpenMode::Create).await?;
    let another = args.another_household;
    let public_url = args.public_url.clone();
    let result = db
        .write(move |conn| {
            if !another && let Some(first) = household::store::list_all(conn)?.first() {
                return Err(ApiError::conflict(
                    "household_exists",
                    format!(
                        "this data directory already has a household ({} \"{}\"); add members with `pillbox member add --household {}`, or pass --another-household to create a second one",
                        first.id, first.name, first.id
                    ),
                ));
            }
            let set_up = household::set_up(
                conn,
                &args.household,
                &time_zone,
                &NewMember {
                    email: &email,
                    password_hash: &password_hash,
                    person_name: &person_name,
                    role: Role::Owner,
                },
            )?;
            if let Some(url) = &public_url {
                crate::db::instance::set(conn, crate::db::instance::PUBLIC_URL, url)?;
            }
            Ok(set_up)
        })
        .await;
    db.close().await;
    let set_up = result.map_err(|e| e.to_string())?;
    println!("{}", set_up.household_id);
    eprintln!(
        "Created household {} with its owner. Next: start the server with `pillbox serve`",
        set_up.household_id
    );
    match &args.public_url {
        Some(url) => eprintln!(
            "Phones and other computers open Pillbox at {url}; links in invitations use it."
        ),
        None => eprintln!(
            "Links (invitations, phone sign-in) use the address each device opens; to fix one, give --public-url (here or to serve). Phones need serve --listen 0.0.0.0:8080."
        ),
    }
    Ok(())
}

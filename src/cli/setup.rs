//! `pillbox setup`: the first household and its owner.

use clap::Args;

use super::{CliResult, open_db, password};
use crate::auth::Role;
use crate::config::DataDirArgs;
use crate::household::{self, NewMember};

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
    /// Also create the owner's own person with this name
    #[arg(long)]
    pub name: Option<String>,
}

pub async fn run(args: SetupArgs) -> CliResult {
    let time_zone = args.time_zone.clone().unwrap_or_else(system_time_zone);
    // The operator typed it, so naming it back is help, not a leak (the API never echoes it).
    household::check_time_zone(&time_zone)
        .map_err(|_| format!("time zone {time_zone} is not a known IANA time zone name"))?;
    let password = password::read_new_password()?;
    let password_hash = password::hash(password).await?;
    let db = open_db(&args.data).await?;
    let result = db
        .write(move |conn| {
            household::set_up(
                conn,
                &args.household,
                &time_zone,
                &NewMember {
                    email: args.email.trim(),
                    password_hash: &password_hash,
                    person_name: args.name.as_deref(),
                    role: Role::Owner,
                },
            )
        })
        .await;
    db.close().await;
    let set_up = result.map_err(|e| e.to_string())?;
    println!("{}", set_up.household_id);
    eprintln!(
        "Created household {} with its owner. Next: pillbox token create --household {} --email <owner email> --name <token name>",
        set_up.household_id, set_up.household_id
    );
    Ok(())
}

fn system_time_zone() -> String {
    jiff::tz::TimeZone::try_system()
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .unwrap_or_else(|| "UTC".to_string())
}

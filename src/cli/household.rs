//! `pillbox household list`: the households on this server, with the ids
//! the other commands take.

use clap::{Args, Subcommand};

use super::common::{CliResult, open_db};
use super::output::print_table;
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::household::store;

#[derive(Debug, Subcommand)]
pub enum HouseholdCommand {
    /// List every household with its id, time zone and number of active members
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
}

pub async fn run(command: HouseholdCommand) -> CliResult {
    let HouseholdCommand::List(args) = command;
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let result = db.read(store::list_all).await;
    db.close().await;
    let households = result.map_err(|e| e.to_string())?;
    print_table(
        &["ID", "NAME", "TIME ZONE", "MEMBERS", "CREATED"],
        households
            .into_iter()
            .map(|h| {
                vec![
                    h.id.to_string(),
                    h.name,
                    h.time_zone,
                    h.active_members.to_string(),
                    h.created_at.into(),
                ]
            })
            .collect(),
    );
    Ok(())
}

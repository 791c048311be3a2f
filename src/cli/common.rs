//! What the subcommands share: their failure type, the database they open
//! and the paging of a store's lists.

use crate::config::DataDirArgs;
use crate::db::{Db, OpenMode};
use crate::domain::Page;
use crate::error::Result;

/// A failed command: its one line for the operator.
pub type CliResult<T = ()> = Result<T, String>;

/// Opens the database off the async threads.
pub(super) async fn open_db(data: &DataDirArgs, mode: OpenMode) -> CliResult<Db> {
    let dir = data.data_dir.clone();
    tokio::task::spawn_blocking(move || Db::open_with(&dir, mode))
        .await
        .map_err(|e| format!("cannot open the database: {e}"))?
        .map_err(|e| e.to_string())
}

/// Every row of a paged store list, page by page.
pub(super) fn all_pages<T>(mut fetch: impl FnMut(Page) -> Result<(Vec<T>, i64)>) -> Result<Vec<T>> {
    let mut all = Vec::new();
    for page in 1.. {
        let (rows, total) = fetch(Page {
            page,
            per_page: Page::MAX_PER_PAGE,
        })?;
        let last = rows.is_empty();
        all.extend(rows);
        if last || all.len() as i64 >= total {
            break;
        }
    }
    Ok(all)
}

//! One page of a list, and the paging facts a collection reports.

use schemars::JsonSchema;
use serde::Serialize;

/// One page of a list: `page` from 1, `per_page` 1..=100 (default 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: u32,
    pub per_page: u32,
}

impl Page {
    pub const MAX_PER_PAGE: u32 = 100;
    /// Far past any real list; keeps offsets well inside SQLite's integers.
    pub const MAX_PAGE: u32 = 1_000_000_000;

    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.per_page)
    }

    pub fn limit(&self) -> i64 {
        i64::from(self.per_page)
    }

    pub fn meta(&self, total_count: i64) -> PageMeta {
        PageMeta {
            page: self.page,
            per_page: self.per_page,
            total_count,
        }
    }
}

// A collection's `meta`: which page this is and how many records match.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(rename = "PaginationMeta", deny_unknown_fields)]
pub struct PageMeta {
    #[schemars(range(min = 1, max = Page::MAX_PAGE))]
    pub page: u32,
    #[schemars(range(min = 1, max = Page::MAX_PER_PAGE))]
    pub per_page: u32,
    #[schemars(range(min = 0))]
    pub total_count: i64,
}

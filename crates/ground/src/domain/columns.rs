//! How the shared domain types are kept in a column.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::domain::Timestamp;

impl ToSql for Timestamp {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for Timestamp {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        // Only the stored form is ever written, so reading does not re-parse
        // (a snapshot reads tens of thousands of these).
        Ok(Timestamp::from_stored(value.as_str()?.to_owned()))
    }
}

//! SQL for schedules. A retired schedule keeps its row (past doses and
//! pause history point at it) and is invisible to every read here.

use crate::db::PrepareKept;
use jiff::civil::Date;
use rusqlite::types::Type;
use rusqlite::{Connection, Row, ToSql, params};

use super::model::ScheduleRow;
use crate::care::source_row::{Common, OWN, SourceTable, Statements};
use crate::error::Result;

/// The schedule's own columns, after the common ones (`source_row::OWN`);
/// every one of them changes on update.
pub static TABLE: SourceTable = SourceTable {
    table: "schedules",
    alias: "s",
    from: "schedules s
        JOIN people p ON p.id = s.person_id
        JOIN medications m ON m.id = s.medication_id
        LEFT JOIN dosage_options d ON d.id = s.source_dosage_option_id",
    insert_into: "INSERT INTO schedules",
    update: "UPDATE schedules",
    own: &[
        "frequency",
        "schedule_type",
        "schedule_config",
        "start_date",
        "end_date",
    ],
    changeable: 5,
    order_by: "s.id",
    sql: Statements::new(),
};

fn conversion(
    index: usize,
    err: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(err))
}

fn date(r: &Row<'_>, index: usize) -> rusqlite::Result<Option<Date>> {
    r.get::<_, Option<String>>(index)?
        .map(|text| text.parse::<Date>().map_err(|e| conversion(index, e)))
        .transpose()
}

pub fn from_row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    let common = Common::read(r)?;
    let config: String = r.get(OWN + 2)?;
    Ok(ScheduleRow {
        source: common.source,
        frequency: r.get(OWN)?,
        schedule_type: r.get(OWN + 1)?,
        schedule_config: serde_json::from_str(&config).map_err(|e| conversion(OWN + 2, e))?,
        start_date: date(r, OWN + 3)?.ok_or(rusqlite::Error::InvalidColumnType(
            OWN + 3,
            "start_date".into(),
            Type::Null,
        ))?,
        end_date: date(r, OWN + 4)?,
        active: common.active,
        notes: common.notes,
        stamps: common.stamps,
    })
}

/// The values of the schedule's own columns, in `TABLE` order.
pub fn own_values(s: &ScheduleRow) -> Vec<Box<dyn ToSql + '_>> {
    vec![
        Box::new(&s.frequency),
        Box::new(&s.schedule_type),
        Box::new(s.schedule_config.to_string()),
        Box::new(s.start_date.to_string()),
        Box::new(s.end_date.map(|d| d.to_string())),
    ]
}

/// The live (unretired) schedules of a person with set times (prn
/// excluded) that have not ended before `today`: (portable id, type,
/// stored config).
pub fn running_for_person(
    conn: &Connection,
    person_id: i64,
    today: Date,
) -> Result<
    Vec<(
        String,
        crate::medicine::vocab::ScheduleType,
        serde_json::Value,
    )>,
> {
    Ok(conn
        .prepare_kept(
            "SELECT portable_id, schedule_type, schedule_config FROM schedules
             WHERE person_id = ?1 AND retired_at IS NULL AND schedule_type <> 'prn'
               AND (end_date IS NULL OR end_date >= ?2)
             ORDER BY id",
        )?
        .query_map(params![person_id, today.to_string()], |r| {
            let config: String = r.get(2)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                serde_json::from_str(&config).map_err(|e| conversion(2, e))?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

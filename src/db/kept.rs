//! Values worked out from the data, kept on a reader thread until the next
//! commit. A household's plan or schedules are the same for every read
//! until something commits, and phones ask often; SQLite's `data_version`
//! (see [`read_generation`]) tells a reader thread, in one cheap read of
//! the WAL index, whether anything was committed since, by this server's
//! writer or by a command run beside it.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::rc::Rc;

use rusqlite::Connection;

use super::readers::read_generation;

/// Values of one type kept per thread: a few households (or days) at once.
const KEPT_PER_TYPE: usize = 4;

#[derive(Default)]
struct Kept {
    /// The generation every kept value was worked out at.
    generation: Option<i64>,
    /// Per value type, a `Vec<(key, Rc<value>)>`, oldest first.
    values: Vec<(TypeId, Box<dyn Any>)>,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// The value `make` works out for `key`, kept on a reader thread while
/// nothing is committed: the first read after any commit makes it again.
/// Off the reader threads (the writer, a command, a test's own connection)
/// it is made every time. `make` may itself use `kept`.
pub fn kept<K, T, E>(
    conn: &Connection,
    key: K,
    make: impl FnOnce() -> Result<T, E>,
) -> Result<Rc<T>, E>
where
    K: PartialEq + 'static,
    T: 'static,
{
    let Some(generation) = read_generation(conn) else {
        return make().map(Rc::new);
    };
    let found = KEPT.with_borrow_mut(|kept| {
        if kept.generation != Some(generation) {
            kept.values.clear();
            kept.generation = Some(generation);
        }
        entries::<K, T>(kept)
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, value)| value.clone())
    });
    if let Some(value) = found {
        return Ok(value);
    }
    let value = Rc::new(make()?);
    KEPT.with_borrow_mut(|kept| {
        let entries = entries::<K, T>(kept);
        if entries.len() >= KEPT_PER_TYPE {
            entries.remove(0);
        }
        entries.push((key, value.clone()));
    });
    Ok(value)
}

/// Drops everything this thread kept: it is about to read through another
/// connection, whose `data_version` says nothing about this one's.
pub(super) fn forget() {
    KEPT.with_borrow_mut(|kept| *kept = Kept::default());
}

/// The kept values of type `T` under keys of type `K`.
fn entries<K: 'static, T: 'static>(kept: &mut Kept) -> &mut Vec<(K, Rc<T>)> {
    let id = TypeId::of::<(K, T)>();
    let index = match kept.values.iter().position(|(t, _)| *t == id) {
        Some(index) => index,
        None => {
            kept.values.push((id, Box::new(Vec::<(K, Rc<T>)>::new())));
            kept.values.len() - 1
        }
    };
    kept.values[index]
        .1
        .downcast_mut::<Vec<(K, Rc<T>)>>()
        .expect("kept values are stored under their own type")
}

//! Portable ids: the identity a record keeps across installations.

thread_local! {
    /// The portable id the next record made on this thread takes (see
    /// [`with_portable_id`]).
    static NEXT_PORTABLE_ID: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// A new portable id: UUID v7, so ids sort by creation time; or the one a
/// portable import asked for with [`with_portable_id`].
pub fn new_portable_id() -> String {
    NEXT_PORTABLE_ID
        .with(|next| next.borrow_mut().take())
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// Runs `f` (a create rule) so that the first record it makes takes
/// `portable_id`: an imported record keeps its identity across
/// installations, made by the same rule as any other. Writes run on the
/// one writer thread, one job at a time, so the id cannot reach another
/// request; it is cleared when `f` returns, whether or not it was used.
pub fn with_portable_id<T>(portable_id: &str, f: impl FnOnce() -> T) -> T {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            NEXT_PORTABLE_ID.with(|next| next.borrow_mut().take());
        }
    }
    NEXT_PORTABLE_ID.with(|next| *next.borrow_mut() = Some(portable_id.to_string()));
    let _clear = Clear;
    f()
}

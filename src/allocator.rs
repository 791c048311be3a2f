//! Free memory handed back to the system once a burst is over, instead of
//! kept by glibc's allocator for the next one. (Fewer arenas, with
//! `M_ARENA_MAX` 2, kept a little less but made reads about twice as
//! expensive in CPU, from contention on the arena locks: not used.)

/// Hands the free memory of every arena back to the system.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the arenas' own locks; it may run beside
    // allocations on other threads.
    unsafe {
        libc::malloc_trim(0);
    }
}

//! How glibc's allocator keeps memory for a long-running server on a small
//! box: a bounded number of arenas, and free memory handed back to the
//! system once a burst is over instead of kept for the next one.

/// Arenas glibc may make; every thread that allocates may otherwise get
/// one of its own (up to eight per core), each keeping its free memory.
const ARENAS: i32 = 2;

/// Makes the allocator's settings ours. Called once at start, before the
/// server's threads exist.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's M_ARENA_MAX (malloc.h); libc does not name it on every target.
        const M_ARENA_MAX: i32 = -8;
        // SAFETY: mallopt only changes the allocator's parameters, and no
        // other thread is allocating yet.
        unsafe {
            libc::mallopt(M_ARENA_MAX, ARENAS);
        }
    }
}

/// Hands the free memory of every arena back to the system.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the arenas' own locks; it may run beside
    // allocations on other threads.
    unsafe {
        libc::malloc_trim(0);
    }
}

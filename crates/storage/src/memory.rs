//! Memory handed back to the system once it is no longer used: free heap
//! after a burst, and the pages of the binary that start-up or the last
//! requests ran.
//! (Fewer arenas, with `M_ARENA_MAX` 2, kept a little less heap but made
//! reads about twice as expensive in CPU, from contention on the arena
//! locks: not used.)

/// What to hand back to the system after a spell of the server's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Return {
    Nothing,
    /// What the database connections hold while nobody asks anything (what
    /// they free reaches the allocator, and the system when the heap is next
    /// handed back).
    Caches,
    /// Caches and the allocator's free memory, while work keeps coming.
    CachesAndHeap,
    /// The allocator's free memory and the binary's mapped code, while
    /// nothing is asked of the server.
    HeapAndCode,
}

/// Decides, spell after spell, when memory goes back: once quiet after
/// any work (a request, or a background task's read or write), everything
/// (caches first, then heap and code a spell later, once the caches are
/// freed); while quiet, heap and code again every [`Returns::EVERY`]
/// spells (timers and the log thread run a little code too); while work
/// keeps coming, caches and heap every [`Returns::EVERY`] spells, as after
/// a burst the allocator keeps what it freed for the next one.
#[derive(Debug)]
pub struct Returns {
    /// The count of work started at the end of the last spell.
    seen: u64,
    quiet_spells: u32,
    busy_spells: u32,
}

impl Returns {
    /// Spells between two returns of the same kind.
    pub const EVERY: u32 = 20;

    /// Start-up is over, and what only it ran was handed back: `work` is
    /// the count of work started so far.
    pub fn after_start_up(work: u64) -> Returns {
        Returns {
            seen: work,
            quiet_spells: 2,
            busy_spells: 0,
        }
    }

    /// What to hand back now that a spell has ended with `work` (requests
    /// and database jobs) started since the process began.
    pub fn after_spell(&mut self, work: u64) -> Return {
        if work != self.seen {
            self.seen = work;
            self.quiet_spells = 0;
            self.busy_spells += 1;
            if self.busy_spells.is_multiple_of(Self::EVERY) {
                return Return::CachesAndHeap;
            }
            return Return::Nothing;
        }
        self.busy_spells = 0;
        // Quiet for years: the count starts again from "heap and code".
        self.quiet_spells = self.quiet_spells.checked_add(1).unwrap_or(2);
        match self.quiet_spells {
            1 => Return::Caches,
            n if n % Self::EVERY == 2 => Return::HeapAndCode,
            _ => Return::Nothing,
        }
    }
}

/// glibc's allocator settings `pillbox serve` runs with: no per-thread
/// cache of freed blocks (tcache). Each thread's cache keeps up to seven
/// freed blocks of each small size, which the allocator counts as in use:
/// after a burst they pin the pages around them in every thread's arena,
/// where `malloc_trim` cannot reach (about 2 to 5 MB a minute after the
/// load benchmark's burst; CPU per request the same within the noise).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const SERVING_TUNABLES: &str = "glibc.malloc.tcache_count=0";

/// Set in the environment of a process started again by
/// [`start_again_with_allocator_settings`], so that it never tries twice.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const STARTED_AGAIN: &str = "PILLBOX_ALLOCATOR_SETTINGS";

/// Starts this process again in place (`exec`: the same process id,
/// arguments and environment) with [`SERVING_TUNABLES`], which glibc reads
/// only when a program starts. Returns when it did not: another C library,
/// `GLIBC_TUNABLES` already set (the administrator's choice stands), or
/// the program could not be run again (the server then runs with glibc's
/// defaults). Call it before any thread is started.
pub fn start_again_with_allocator_settings() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("GLIBC_TUNABLES").is_some() || std::env::var_os(STARTED_AGAIN).is_some()
        {
            return;
        }
        let mut args = std::env::args_os();
        let Some(program) = args.next() else {
            return;
        };
        // Only returns on failure.
        let _ = std::process::Command::new("/proc/self/exe")
            .arg0(program)
            .args(args)
            .env("GLIBC_TUNABLES", SERVING_TUNABLES)
            .env(STARTED_AGAIN, "1")
            .exec();
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

/// Unmaps the binary's read-only pages (code, constant data, unwind
/// tables) from this process; returns how many bytes were unmapped.
///
/// Start-up runs code that serving never runs again (the command line, the
/// migrations, the OpenAPI document built from every type), and the kernel
/// maps the binary's pages 64 KiB around each one touched, so after
/// start-up, or a few requests, most of the binary stays mapped in,
/// counted in the process's resident memory. These pages are clean copies
/// of the file: unmapped, they stay in the kernel's file cache, and
/// whatever runs next maps its page back in with a minor fault (no disk
/// read while the file is cached).
/// Writable segments (and the relocated read-only-after-relocation part)
/// are never touched.
pub fn release_mapped_code() -> usize {
    #[cfg(target_os = "linux")]
    {
        let mut released = 0;
        for (start, end) in read_only_segments() {
            // SAFETY: [start, end) lies inside a read-only, never written
            // mapping of the executable (no PF_W, outside GNU_RELRO), so
            // dropping its pages loses nothing: the next access reads the
            // same bytes from the file again.
            let done = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
            };
            if done == 0 {
                released += end - start;
            }
        }
        released
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Page-aligned address ranges of the executable's read-only loaded
/// segments, without the part that relocation wrote (GNU_RELRO).
#[cfg(target_os = "linux")]
fn read_only_segments() -> Vec<(usize, usize)> {
    struct Found {
        ranges: Vec<(usize, usize)>,
        relro: Option<(usize, usize)>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: called by dl_iterate_phdr with a valid `info` for the
        // object (the executable comes first) and our `Found` as `data`.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
        let headers = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let base = info.dlpi_addr as usize;
        for header in headers {
            let start = base + header.p_vaddr as usize;
            let end = start + header.p_memsz as usize;
            match header.p_type {
                libc::PT_LOAD if header.p_flags & libc::PF_W == 0 => {
                    found.ranges.push((start, end))
                }
                libc::PT_GNU_RELRO => found.relro = Some((start, end)),
                _ => {}
            }
        }
        // The executable only: stop after the first object.
        1
    }
    let mut found = Found {
        ranges: Vec::new(),
        relro: None,
    };
    // SAFETY: `each` only reads what dl_iterate_phdr hands it and writes
    // to `found`, which outlives the call.
    unsafe {
        libc::dl_iterate_phdr(Some(each), &mut found as *mut Found as *mut libc::c_void);
    }
    // SAFETY: sysconf only reads a constant of the system.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|page| page.is_power_of_two())
        .unwrap_or(4096);
    let relro = found.relro;
    found
        .ranges
        .into_iter()
        // A read-only segment that relocation wrote to is left alone whole.
        .filter(|&(start, end)| {
            relro.is_none_or(|(r_start, r_end)| end <= r_start || r_end <= start)
        })
        .filter_map(|(start, end)| {
            let start = start.next_multiple_of(page);
            let end = end / page * page;
            (start < end).then_some((start, end))
        })
        .collect()
}

#[cfg(test)]
mod returns_tests {
    use super::{Return, Returns};

    /// Which spells (by index) returned something, and what.
    fn returns_at(seen: &[Return]) -> Vec<(usize, Return)> {
        seen.iter()
            .copied()
            .enumerate()
            .filter(|(_, r)| *r != Return::Nothing)
            .collect()
    }

    /// The returns of successive spells, each ending with the count of work given.
    fn run(returns: &mut Returns, counts: impl IntoIterator<Item = u64>) -> Vec<Return> {
        counts.into_iter().map(|n| returns.after_spell(n)).collect()
    }

    #[test]
    fn after_start_up_heap_and_code_go_again_every_ten_seconds_while_quiet() {
        let mut returns = Returns::after_start_up(0);
        let seen = run(&mut returns, [0; 41]);
        let at = returns_at(&seen);
        assert_eq!(
            at,
            vec![(19, Return::HeapAndCode), (39, Return::HeapAndCode)]
        );
    }

    #[test]
    fn a_quiet_spell_after_requests_frees_caches_then_heap_and_code() {
        let mut returns = Returns::after_start_up(0);
        let seen = run(&mut returns, [3, 3, 3, 3]);
        assert_eq!(
            seen,
            vec![
                Return::Nothing,
                Return::Caches,
                Return::HeapAndCode,
                Return::Nothing
            ]
        );
        // Another request, another full return once quiet.
        let seen = run(&mut returns, [4, 4, 4]);
        assert_eq!(
            seen,
            vec![Return::Nothing, Return::Caches, Return::HeapAndCode]
        );
    }

    #[test]
    fn while_busy_only_caches_and_heap_go_every_ten_seconds() {
        let mut returns = Returns::after_start_up(0);
        let seen = run(&mut returns, 1..=45);
        let at = returns_at(&seen);
        assert_eq!(
            at,
            vec![(19, Return::CachesAndHeap), (39, Return::CachesAndHeap)]
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// `(start, end, permissions, path)` of each mapping of this process.
    fn mappings() -> Vec<(usize, usize, String, String)> {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        maps.lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let (start, end) = fields.next()?.split_once('-')?;
                let permissions = fields.next()?.to_string();
                let path = fields.nth(3).unwrap_or("").to_string();
                Some((
                    usize::from_str_radix(start, 16).ok()?,
                    usize::from_str_radix(end, 16).ok()?,
                    permissions,
                    path,
                ))
            })
            .collect()
    }

    /// Resident kB of the executable's mappings without write permission.
    fn resident_read_only_kb() -> u64 {
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let mut counted = false;
        let mut kb = 0;
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or("");
            if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                let permissions = fields.next().unwrap_or("");
                let path = fields.nth(3).unwrap_or("");
                counted = !permissions.contains('w') && std::path::Path::new(path) == exe;
            } else if first == "Rss:" && counted {
                kb += fields
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        kb
    }

    #[test]
    fn only_the_executables_read_only_pages_are_released() {
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let segments = super::read_only_segments();
        assert!(!segments.is_empty(), "the code segment is found");
        let maps = mappings();
        for (start, end) in segments {
            assert_eq!(start % 4096, 0, "page-aligned start");
            assert_eq!(end % 4096, 0, "page-aligned end");
            // Every page of the range lies in a read-only mapping of the
            // executable (a segment may span several mappings).
            let mut next = start;
            while next < end {
                let (_, mapping_end, permissions, path) = maps
                    .iter()
                    .find(|(s, e, _, _)| *s <= next && next < *e)
                    .unwrap_or_else(|| panic!("{next:#x} is not mapped"));
                assert!(!permissions.contains('w'), "{next:#x} is writable");
                assert_eq!(
                    std::path::Path::new(path),
                    exe,
                    "{next:#x} is the executable's"
                );
                next = *mapping_end;
            }
        }
    }

    #[test]
    fn code_runs_again_after_its_pages_are_released() {
        // Fault in much of the harness and SQLite before releasing.
        let sum = |conn: &rusqlite::Connection| -> i64 {
            conn.query_row("SELECT sum(value) FROM json_each('[40, 2]')", [], |r| {
                r.get(0)
            })
            .expect("query")
        };
        let conn = rusqlite::Connection::open_in_memory().expect("sqlite");
        assert_eq!(sum(&conn), 42);
        let before = resident_read_only_kb();

        let released = super::release_mapped_code();

        let after = resident_read_only_kb();
        assert!(released > 0, "something was released");
        assert!(
            after < before,
            "resident code fell: {before} kB, then {after} kB"
        );
        // Code and constant data are read back from the file as they run.
        assert_eq!(sum(&conn), 42);
        assert_eq!(format!("{:?}", ["pillbox"]), r#"["pillbox"]"#);
    }
}

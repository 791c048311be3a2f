//! Files that hold health data or secrets are created owner-only whatever
//! the umask the process was started with (a container runtime, a shell or
//! a cron line may leave it at 000): directories 0700, files 0600. The mode
//! is given at creation and then set on the open file itself (`fchmod`), so
//! neither a loose umask nor an earlier file of the same name decides it.
//!
//! SQLite creates a database's `-wal`, `-shm` and `-journal` files with the
//! mode of the database file, so a database created here first keeps its
//! companions private too.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::DATABASE_FILE;

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

/// Creates the directory `path` (and any missing parents) owner-only. A
/// directory that already exists is left as it is: it is the operator's,
/// and [`exposure_warning`] tells them when it is open to others.
pub fn create_dir(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)?;
    std::fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
}

/// Opens `path` for writing as an owner-only file, created or emptied.
pub fn create_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Creates `path` as an owner-only file; an existing file is an error.
pub fn create_new_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Writes `bytes` to `path` as an owner-only file.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_file(path)?.write_all(bytes)
}

/// Creates an empty owner-only database file at `path` unless one exists,
/// so that SQLite, which would create it with the umask's mode, opens ours.
pub fn create_database(path: &Path) -> io::Result<()> {
    match create_new_file(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The permission bits of `path` when users other than its owner have any
/// access to it.
fn open_to_others(path: &Path) -> Option<u32> {
    let mode = std::fs::metadata(path).ok()?.mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// One line for the operator when the data directory or its database files
/// can be reached by group or others (an older install, or a copy made
/// without care), naming the commands that make them private.
pub fn exposure_warning(data_dir: &Path) -> Option<String> {
    let database = data_dir.join(DATABASE_FILE);
    let mut open = Vec::new();
    let mut fixes = Vec::new();
    if let Some(mode) = open_to_others(data_dir) {
        open.push(format!(
            "the data directory {} (mode {mode:o})",
            data_dir.display()
        ));
        fixes.push(format!("chmod 700 {}", data_dir.display()));
    }
    let files: Vec<String> = ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let path = data_dir.join(format!("{DATABASE_FILE}{suffix}"));
            open_to_others(&path).map(|mode| format!("{} (mode {mode:o})", path.display()))
        })
        .collect();
    if !files.is_empty() {
        open.push(format!("the database {}", files.join(", ")));
        fixes.push(format!("chmod 600 {}*", database.display()));
    }
    if open.is_empty() {
        return None;
    }
    Some(format!(
        "{} can be read by other users of this machine, but hold health data; make them private with: {}",
        open.join(" and "),
        fixes.join(" && ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn an_existing_loose_file_is_made_private_when_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bundle");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o666)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(mode(&path), FILE_MODE);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn the_warning_names_what_is_open_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        create_dir(&data).unwrap();
        assert_eq!(mode(&data), DIR_MODE);
        create_database(&data.join(DATABASE_FILE)).unwrap();
        assert_eq!(exposure_warning(&data), None);
        std::fs::set_permissions(&data, Permissions::from_mode(0o755)).unwrap();
        let line = exposure_warning(&data).unwrap();
        assert!(
            line.contains("mode 755") && line.contains("chmod 700"),
            "{line}"
        );
        assert!(!line.contains("chmod 600"), "{line}");
        std::fs::set_permissions(data.join(DATABASE_FILE), Permissions::from_mode(0o640)).unwrap();
        let line = exposure_warning(&data).unwrap();
        assert!(
            line.contains("mode 640") && line.contains("chmod 600"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}

//! Reading a new password: from stdin when it is not a terminal (scripts,
//! `echo ... | pillbox setup`), otherwise prompted twice without echo.

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;

use super::common::CliResult;
use crate::auth::password;

pub fn read_new_password() -> CliResult<String> {
    let stdin = std::io::stdin();
    let entered = if stdin.is_terminal() {
        let first = rpassword::prompt_password("New password (at least 12 characters): ")
            .map_err(|e| format!("cannot read the password: {e}"))?;
        let second = rpassword::prompt_password("Repeat the password: ")
            .map_err(|e| format!("cannot read the password: {e}"))?;
        if first != second {
            return Err("the two passwords differ".into());
        }
        first
    } else {
        read_one_line().map_err(|e| format!("cannot read the password from stdin: {e}"))?
    };
    if entered.is_empty() {
        return Err("no password given (send it on stdin or run in a terminal)".into());
    }
    password::check_policy(&entered)?;
    Ok(entered)
}

/// Reads one line from stdin byte by byte, unbuffered, so the rest of a
/// piped stdin is left for the next command of a script: `printf '%s\n%s\n'
/// "$OWNER_PW" "$PARTNER_PW" | { pillbox setup ...; pillbox member add ...; }`.
fn read_one_line() -> std::io::Result<String> {
    let mut stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while stdin.read(&mut byte)? == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "the password is not UTF-8")
    })
}

/// Hashes on a blocking thread: argon2id is deliberately slow.
pub async fn hash(password: String) -> CliResult<String> {
    tokio::task::spawn_blocking(move || password::hash(&password))
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?
}

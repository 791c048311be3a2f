//! Reading a new password: from stdin when it is not a terminal (scripts,
//! `echo ... | pillbox setup`), otherwise prompted twice without echo.

use std::io::{BufRead, IsTerminal};

use super::CliResult;
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
        let mut line = String::new();
        stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    if entered.is_empty() {
        return Err("no password given (send it on stdin or run in a terminal)".into());
    }
    password::check_policy(&entered)?;
    Ok(entered)
}

/// Hashes on a blocking thread: argon2id is deliberately slow.
pub async fn hash(password: String) -> CliResult<String> {
    tokio::task::spawn_blocking(move || password::hash(&password))
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?
}

//! The name of a new member's own person: `--name`, or asked for when stdin
//! is a terminal. Every member has their own person (DESIGN: Memberships).

use std::io::{BufRead, IsTerminal, Write};

use super::common::CliResult;

pub fn person_name(given: Option<String>, prompt: &str) -> CliResult<String> {
    let entered = match given {
        Some(name) => name,
        None if std::io::stdin().is_terminal() => {
            eprint!("{prompt}: ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the name: {e}"))?;
            line
        }
        None => {
            return Err(
                "--name is required: every member has their own person in the household (run in a terminal to be asked)"
                    .into(),
            );
        }
    };
    let name = entered.trim();
    if name.is_empty() {
        return Err("the name must not be blank".into());
    }
    Ok(name.to_string())
}

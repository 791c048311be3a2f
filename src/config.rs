//! Settings of a running server, from clap flags with `PILLBOX_*` environment
//! fallbacks. No global state: the values travel in `AppState`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

pub const DEFAULT_DATA_DIR: &str = "./pillbox-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_RATE_LIMIT: u32 = 600;

/// Where the data lives; every command takes it.
#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// Directory holding the SQLite database and other data
    #[arg(long, env = "PILLBOX_DATA_DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Address or host name and port to listen on, e.g. 0.0.0.0:8080 or localhost:8080
    #[arg(long, env = "PILLBOX_LISTEN", default_value = DEFAULT_LISTEN, value_parser = parse_listen)]
    pub listen: String,
    /// Public base URL of this server (used in links), e.g. https://pillbox.home.example
    #[arg(long, env = "PILLBOX_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Requests a minute allowed per credential (bursts up to the same number); 0 switches the limit off
    #[arg(long, env = "PILLBOX_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
    pub rate_limit: u32,
    /// Log format
    #[arg(long, env = "PILLBOX_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// `host:port` or `[v6]:port`; the host is resolved when the server binds.
fn parse_listen(text: &str) -> Result<String, String> {
    if text.parse::<SocketAddr>().is_ok() {
        return Ok(text.to_string());
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok(text.to_string())
        }
        _ => Err("expected HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080".into()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// What the HTTP layer needs to know at run time.
#[derive(Debug, Clone)]
pub struct Settings {
    pub public_url: Option<String>,
    pub rate_limit_per_minute: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            public_url: None,
            rate_limit_per_minute: DEFAULT_RATE_LIMIT,
        }
    }
}

impl From<&ServeArgs> for Settings {
    fn from(args: &ServeArgs) -> Self {
        Settings {
            public_url: args.public_url.clone(),
            rate_limit_per_minute: args.rate_limit,
        }
    }
}

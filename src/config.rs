//! Settings of a running server, from clap flags with `PILLBOX_*` environment
//! fallbacks. No global state: each area's settings travel in `AppState` as
//! that area's part (`crate::app` puts them in).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

pub use crate::identity::settings::{
    DEFAULT_ACCESS_TOKEN_TTL_SECS, DEFAULT_MOBILE_CLIENT_ID, DEFAULT_MOBILE_REDIRECT_URI,
    DEFAULT_OIDC_NAME, DEFAULT_REFRESH_TOKEN_TTL_DAYS, DEFAULT_WEB_CLIENT_ID,
    DEFAULT_WEB_REDIRECT_PATH, OAuthSettings, OidcSettings,
};
pub use crate::reminders::settings::{
    DEFAULT_PUSH_CONTACT, DEFAULT_REMINDER_CATCH_UP_MINUTES, ReminderSettings,
};

pub const DEFAULT_DATA_DIR: &str = "./pillbox-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_RATE_LIMIT: u32 = 600;
pub const DEFAULT_AUTH_FAILURE_LIMIT: u32 = 20;
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 5;
pub const DEFAULT_MAX_CONNECTIONS: u32 = 256;
pub const DEFAULT_BLOCKING_THREADS: u32 = 8;
pub const DEFAULT_INVITATION_TTL_DAYS: u64 = 7;
pub const DEFAULT_SMTP_FROM: &str = "Pillbox <pillbox@localhost>";

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
    /// The address phones and other computers open Pillbox at (links, the OAuth issuer), e.g. http://raspberrypi.local:8080; default: the one given at set-up, else the address each request reached
    #[arg(long, env = "PILLBOX_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,
    /// Requests a minute allowed per verified credential, and per client address for requests without one (bursts up to the same number); 0 switches the limit off
    #[arg(long, env = "PILLBOX_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
    pub rate_limit: u32,
    /// Failed authentications a minute allowed per client address before it must wait; 0 switches the limit off
    #[arg(long, env = "PILLBOX_AUTH_FAILURE_LIMIT", default_value_t = DEFAULT_AUTH_FAILURE_LIMIT)]
    pub auth_failure_limit: u32,
    /// Reverse proxies in front of the server whose X-Forwarded-For entries are believed (0: the connection's address is the client's)
    #[arg(long, env = "PILLBOX_TRUSTED_PROXIES", default_value_t = 0)]
    pub trusted_proxies: usize,
    /// Seconds a client has to send a request's headers once the connection is ready for one
    #[arg(long, env = "PILLBOX_HEADER_READ_TIMEOUT", default_value_t = DEFAULT_HEADER_READ_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_read_timeout: u64,
    /// Seconds a kept-alive connection may stay without a request before it is closed
    #[arg(long, env = "PILLBOX_IDLE_TIMEOUT", default_value_t = DEFAULT_IDLE_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_timeout: u64,
    /// Connections served at once; more wait in the listen queue until one closes
    #[arg(long, env = "PILLBOX_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Threads for other blocking work (password hashing, backups, file reads); bounds memory under load
    #[arg(long, env = "PILLBOX_BLOCKING_THREADS", default_value_t = DEFAULT_BLOCKING_THREADS, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub blocking_threads: u32,
    /// Key derivations (argon2id, up to 256 MiB each) of encrypted exports and imports run at once; default half the cores, 1 to 2
    #[arg(long, env = "PILLBOX_KDF_CONCURRENCY", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub kdf_concurrency: Option<u32>,
    /// Encrypted exports and imports that may wait for a key derivation; more are answered 429 with Retry-After
    #[arg(long, env = "PILLBOX_KDF_QUEUE", default_value_t = crate::portable::kdf_pool::DEFAULT_QUEUE as u32, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub kdf_queue: u32,
    /// Database reader threads, each with its own read-only connection; reads beyond them wait in a queue
    #[arg(long, env = "PILLBOX_READER_THREADS", default_value_t = crate::db::DEFAULT_READERS, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub reader_threads: u32,
    /// OAuth client id of the first-party mobile app (a public client)
    #[arg(long, env = "PILLBOX_OAUTH_MOBILE_CLIENT_ID", default_value = DEFAULT_MOBILE_CLIENT_ID)]
    pub oauth_mobile_client_id: String,
    /// Redirect URIs registered for the mobile app, comma-separated; each is matched exactly
    #[arg(long, env = "PILLBOX_OAUTH_MOBILE_REDIRECT_URIS", default_value = DEFAULT_MOBILE_REDIRECT_URI, value_delimiter = ',')]
    pub oauth_mobile_redirect_uris: Vec<String>,
    /// OAuth client id of the web app (a public client)
    #[arg(long, env = "PILLBOX_OAUTH_WEB_CLIENT_ID", default_value = DEFAULT_WEB_CLIENT_ID)]
    pub oauth_web_client_id: String,
    /// Redirect URIs registered for the web app, comma-separated (default: the public URL followed by /app/oauth/callback)
    #[arg(long, env = "PILLBOX_OAUTH_WEB_REDIRECT_URIS", value_delimiter = ',')]
    pub oauth_web_redirect_uris: Vec<String>,
    /// Seconds an OAuth access token lives
    #[arg(long, env = "PILLBOX_ACCESS_TOKEN_TTL", default_value_t = DEFAULT_ACCESS_TOKEN_TTL_SECS, value_parser = clap::value_parser!(u64).range(60..=86_400))]
    pub access_token_ttl: u64,
    /// Days an OAuth refresh token lives unused (each refresh starts the period again)
    #[arg(long, env = "PILLBOX_REFRESH_TOKEN_TTL_DAYS", default_value_t = DEFAULT_REFRESH_TOKEN_TTL_DAYS, value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub refresh_token_ttl_days: u64,
    /// Accept http:// push endpoints and ntfy topics (a push service on the home network, or tests); otherwise only https
    #[arg(long, env = "PILLBOX_PUSH_ALLOW_HTTP", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub push_allow_http: bool,
    /// Let push endpoints and ntfy topics point at loopback, private (RFC 1918, CGNAT, unique-local), link-local and other non-public addresses (an ntfy server on the home network); otherwise they are refused, when submitted and at every delivery
    #[arg(long, env = "PILLBOX_PUSH_ALLOW_PRIVATE_NETWORK", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub push_allow_private_network: bool,
    /// Minutes a reminder may be late (the server was down) and still be sent; older ones are dropped and counted
    #[arg(long, env = "PILLBOX_REMINDER_CATCH_UP_MINUTES", default_value_t = DEFAULT_REMINDER_CATCH_UP_MINUTES, value_parser = clap::value_parser!(i64).range(1..=2880))]
    pub reminder_catch_up_minutes: i64,
    /// Contact for push services (VAPID "sub"): a mailto: or https: URL; defaults to the public URL
    #[arg(long, env = "PILLBOX_PUSH_CONTACT")]
    pub push_contact: Option<String>,
    /// Firebase service account JSON file: reminders to android phones through FCM HTTP v1 (off without it)
    #[arg(long, env = "PILLBOX_FCM_SERVICE_ACCOUNT")]
    pub fcm_service_account: Option<PathBuf>,
    /// FCM API base URL
    #[arg(
        long,
        env = "PILLBOX_FCM_API_URL",
        default_value = "https://fcm.googleapis.com"
    )]
    pub fcm_api_url: String,
    /// APNs signing key (.p8): reminders to iPhones through APNs, with --apns-key-id, --apns-team-id and --apns-topic (off without them)
    #[arg(long, env = "PILLBOX_APNS_KEY_FILE")]
    pub apns_key_file: Option<PathBuf>,
    /// The APNs key's id (10 characters, from the Apple developer account)
    #[arg(long, env = "PILLBOX_APNS_KEY_ID")]
    pub apns_key_id: Option<String>,
    /// The Apple developer team id
    #[arg(long, env = "PILLBOX_APNS_TEAM_ID")]
    pub apns_team_id: Option<String>,
    /// The phone app's bundle id (the APNs topic)
    #[arg(long, env = "PILLBOX_APNS_TOPIC")]
    pub apns_topic: Option<String>,
    /// APNs base URL (https://api.sandbox.push.apple.com for development builds of the app)
    #[arg(
        long,
        env = "PILLBOX_APNS_URL",
        default_value = "https://api.push.apple.com"
    )]
    pub apns_url: String,
    /// Days an invitation link stays valid (a resend starts the period again).
    #[arg(long, env = "PILLBOX_INVITATION_TTL_DAYS", default_value_t = DEFAULT_INVITATION_TTL_DAYS, value_parser = clap::value_parser!(u64).range(1..=365))]
    pub invitation_ttl_days: u64,

    /// SMTP server for invitation emails: `smtps://user:pass@host` (TLS) or
    /// `smtp://user:pass@host?tls=required` (STARTTLS). Unset: no email.
    #[arg(long, env = "PILLBOX_SMTP_URL")]
    pub smtp_url: Option<String>,

    /// The sender address of emails.
    #[arg(long, env = "PILLBOX_SMTP_FROM", default_value = DEFAULT_SMTP_FROM)]
    pub smtp_from: String,

    /// A PEM certificate authority to trust for the SMTP server's TLS
    /// certificate (a private CA or a self-signed certificate), beside the
    /// public roots; needs smtps:// or ?tls=required.
    #[arg(long, env = "PILLBOX_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<PathBuf>,

    /// OpenID Connect issuer for delegated sign-in ("Sign in with …"); on
    /// only with --oidc-client-id and PILLBOX_OIDC_CLIENT_SECRET too. The
    /// provider's redirect URI to register is `<public URL>/oidc/callback`.
    #[arg(long, env = "PILLBOX_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// The client id registered at the OpenID Connect provider.
    #[arg(long, env = "PILLBOX_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// The client secret registered at the provider (prefer the environment variable: flags show in process lists).
    #[arg(long, env = "PILLBOX_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,

    /// The provider's name on the sign-in button ("Sign in with <name>").
    #[arg(long, env = "PILLBOX_OIDC_NAME", default_value = DEFAULT_OIDC_NAME)]
    pub oidc_name: String,

    /// `acr` values of the provider's ID tokens that mean it performed a
    /// second factor (comma-separated). Without one of them, or an `amr`
    /// of `mfa`, `otp` or `hwk`, an account with TOTP is asked for its
    /// code after signing in with the provider too.
    #[arg(long, env = "PILLBOX_OIDC_MFA_ACR", value_delimiter = ',')]
    pub oidc_mfa_acr: Vec<String>,
    /// dm+d client id at the NHS terminology server; medication lookup is off unless this and the client secret are both set
    #[arg(long, env = "TERMINOLOGY_DMD_CLIENT_ID", hide_env_values = true)]
    pub terminology_dmd_client_id: Option<String>,
    /// dm+d client secret at the NHS terminology server (prefer the environment variable)
    #[arg(long, env = "TERMINOLOGY_DMD_CLIENT_SECRET", hide_env_values = true)]
    pub terminology_dmd_client_secret: Option<String>,
    /// FHIR base URL of the terminology server
    #[arg(long, env = "PILLBOX_TERMINOLOGY_URL", default_value = crate::lookup::DEFAULT_TERMINOLOGY_URL)]
    pub terminology_url: String,
    /// OAuth 2.0 token endpoint of the terminology server (client_credentials grant)
    #[arg(long, env = "PILLBOX_TERMINOLOGY_TOKEN_URL", default_value = crate::lookup::DEFAULT_TERMINOLOGY_TOKEN_URL)]
    pub terminology_token_url: String,
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1 for Ollama); AI set-up suggestions are off without it and --ai-model
    #[arg(long, env = "PILLBOX_AI_BASE_URL")]
    pub ai_base_url: Option<String>,
    /// Model name the AI endpoint is asked for
    #[arg(long, env = "PILLBOX_AI_MODEL")]
    pub ai_model: Option<String>,
    /// Bearer key of the AI endpoint, if it needs one (prefer the environment variable)
    #[arg(long, env = "PILLBOX_AI_API_KEY", hide_env_values = true)]
    pub ai_api_key: Option<String>,

    #[arg(long, env = "PILLBOX_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Directory for scheduled backups of the database; none are taken without it
    #[arg(long, env = "PILLBOX_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Time between scheduled backups, e.g. 24h, 6h, 30m or 3600s
    #[arg(long, env = "PILLBOX_BACKUP_INTERVAL", default_value = DEFAULT_BACKUP_INTERVAL, value_parser = parse_interval)]
    pub backup_interval: std::time::Duration,
    /// Scheduled backups kept in the backup directory; older ones are removed
    #[arg(long, env = "PILLBOX_BACKUP_KEEP", default_value_t = DEFAULT_BACKUP_KEEP, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub backup_keep: u32,
}

pub const DEFAULT_BACKUP_INTERVAL: &str = "24h";
pub const DEFAULT_BACKUP_KEEP: u32 = 7;

/// `N` seconds, or a number with `s`, `m`, `h` or `d`; at least a second.
pub fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| "expected a duration such as 24h, 30m or 3600s".to_string())?;
    let seconds = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err("expected a duration such as 24h, 30m or 3600s".into()),
    };
    if seconds == 0 {
        return Err("must be at least one second".into());
    }
    Ok(std::time::Duration::from_secs(seconds))
}

impl ServeArgs {
    pub fn connection_limits(&self) -> crate::http::server::ConnectionLimits {
        crate::http::server::ConnectionLimits {
            header_read_timeout: std::time::Duration::from_secs(self.header_read_timeout),
            idle_timeout: std::time::Duration::from_secs(self.idle_timeout),
            max_connections: self.max_connections,
        }
    }
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

/// Reads the FCM and APNs credentials the arguments name; one clear
/// line when a file is unreadable or the APNs settings are incomplete.
pub fn load_native_push(reminders: &mut ReminderSettings, args: &ServeArgs) -> Result<(), String> {
    use crate::reminders::native;
    if let Some(path) = &args.fcm_service_account {
        reminders.fcm = Some(std::sync::Arc::new(native::load_fcm(
            path,
            &args.fcm_api_url,
        )?));
    }
    let apns = [&args.apns_key_id, &args.apns_team_id, &args.apns_topic];
    match (&args.apns_key_file, apns) {
        (Some(path), [Some(key_id), Some(team_id), Some(topic)]) => {
            reminders.apns = Some(std::sync::Arc::new(native::load_apns(
                path,
                key_id,
                team_id,
                topic,
                &args.apns_url,
            )?));
        }
        (None, [None, None, None]) => {}
        _ => {
            return Err(
                "APNs needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Everything a running server is configured with, each area's part
/// beside the server's own; the composition root hands each area its part.
#[derive(Debug, Clone)]
pub struct Settings {
    pub public_url: Option<String>,
    pub rate_limit_per_minute: u32,
    pub auth_failure_limit_per_minute: u32,
    pub trusted_proxies: usize,
    pub oauth: OAuthSettings,
    pub reminders: ReminderSettings,
    pub invitation_ttl_days: u64,
    /// Email delivery; `None` when no SMTP server is configured.
    pub mail: Option<crate::mail::MailSettings>,
    /// Delegated sign-in; `None` unless issuer, client id and secret are all set.
    pub oidc: Option<OidcSettings>,
    /// Medication lookup; `None` unless both dm+d credentials are set.
    pub terminology: Option<crate::lookup::TerminologySettings>,
    /// AI set-up suggestions; `None` until an endpoint and model are set.
    pub ai: Option<crate::lookup::AiSettings>,
    /// Key derivations of encrypted bundles at once, and requests that may
    /// wait for one (`portable::kdf_pool`).
    pub kdf_workers: usize,
    pub kdf_queue: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            public_url: None,
            rate_limit_per_minute: DEFAULT_RATE_LIMIT,
            auth_failure_limit_per_minute: DEFAULT_AUTH_FAILURE_LIMIT,
            trusted_proxies: 0,
            oauth: OAuthSettings::default(),
            reminders: ReminderSettings::default(),
            invitation_ttl_days: DEFAULT_INVITATION_TTL_DAYS,
            mail: None,
            oidc: None,
            terminology: None,
            ai: None,
            kdf_workers: crate::portable::kdf_pool::default_workers(),
            kdf_queue: crate::portable::kdf_pool::DEFAULT_QUEUE,
        }
    }
}

impl From<&ServeArgs> for Settings {
    fn from(args: &ServeArgs) -> Self {
        Settings {
            public_url: args.public_url.clone(),
            rate_limit_per_minute: args.rate_limit,
            auth_failure_limit_per_minute: args.auth_failure_limit,
            trusted_proxies: args.trusted_proxies,
            oauth: OAuthSettings {
                mobile_client_id: args.oauth_mobile_client_id.clone(),
                mobile_redirect_uris: args.oauth_mobile_redirect_uris.clone(),
                web_client_id: args.oauth_web_client_id.clone(),
                web_redirect_uris: args.oauth_web_redirect_uris.clone(),
                access_token_ttl_secs: args.access_token_ttl,
                refresh_token_ttl_days: args.refresh_token_ttl_days,
            },
            reminders: ReminderSettings {
                push_allow_http: args.push_allow_http,
                push_allow_private_network: args.push_allow_private_network,
                catch_up: jiff::SignedDuration::from_mins(args.reminder_catch_up_minutes),
                push_contact: args
                    .push_contact
                    .clone()
                    .or_else(|| args.public_url.clone())
                    .unwrap_or_else(|| DEFAULT_PUSH_CONTACT.to_string()),
                fcm: None,
                apns: None,
            },
            invitation_ttl_days: args.invitation_ttl_days,
            mail: args
                .smtp_url
                .as_ref()
                .filter(|url| !url.trim().is_empty())
                .map(|url| crate::mail::MailSettings {
                    smtp_url: url.clone(),
                    from: args.smtp_from.clone(),
                    ca_file: args.smtp_ca_file.clone(),
                }),
            oidc: oidc_settings(args),
            terminology: crate::lookup::TerminologySettings::configured(
                args.terminology_dmd_client_id.as_deref(),
                args.terminology_dmd_client_secret.as_deref(),
                &args.terminology_url,
                &args.terminology_token_url,
            ),
            ai: crate::lookup::AiSettings::configured(
                args.ai_base_url.as_deref(),
                args.ai_model.as_deref(),
                args.ai_api_key.as_deref(),
            ),
            kdf_workers: args
                .kdf_concurrency
                .map_or_else(crate::portable::kdf_pool::default_workers, |n| n as usize),
            kdf_queue: args.kdf_queue as usize,
        }
    }
}

fn oidc_settings(args: &ServeArgs) -> Option<OidcSettings> {
    let set = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Some(OidcSettings {
        issuer: set(&args.oidc_issuer)?,
        client_id: set(&args.oidc_client_id)?,
        client_secret: set(&args.oidc_client_secret)?,
        name: args.oidc_name.trim().to_string(),
        mfa_acr_values: args
            .oidc_mfa_acr
            .iter()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    })
}

/// `--public-url` in its one form, or clap's error naming it.
pub fn public_url(text: &str) -> Result<String, String> {
    crate::domain::public_url::parse(text).map_err(str::to_string)
}

//! The registered public clients: the first-party mobile app and the web
//! app, both from configuration. Redirect URIs are compared exactly.

use super::settings::{DEFAULT_WEB_REDIRECT_PATH, OAuthSettings};

/// The one scope: what the account's memberships and grants allow.
pub const SCOPE: &str = "pillbox";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    pub redirect_uris: Vec<String>,
}

/// Every registered client; `base` is the server's origin (the web app's
/// default redirect URI hangs off it).
pub fn registered(oauth: &OAuthSettings, base: &str) -> Vec<Client> {
    let web_redirects = if oauth.web_redirect_uris.is_empty() {
        vec![format!("{base}{DEFAULT_WEB_REDIRECT_PATH}")]
    } else {
        oauth.web_redirect_uris.clone()
    };
    vec![
        Client {
            id: oauth.mobile_client_id.clone(),
            redirect_uris: oauth.mobile_redirect_uris.clone(),
        },
        Client {
            id: oauth.web_client_id.clone(),
            redirect_uris: web_redirects,
        },
    ]
}

pub fn find(oauth: &OAuthSettings, base: &str, client_id: &str) -> Option<Client> {
    registered(oauth, base)
        .into_iter()
        .find(|c| c.id == client_id)
}

impl Client {
    /// The redirect URI a request names, if it is registered for this
    /// client character for character; a request may leave it out only
    /// when exactly one is registered.
    pub fn redirect_uri(&self, requested: Option<&str>) -> Option<String> {
        match requested {
            Some(uri) => self.redirect_uris.iter().find(|r| *r == uri).cloned(),
            None if self.redirect_uris.len() == 1 => Some(self.redirect_uris[0].clone()),
            None => None,
        }
    }
}

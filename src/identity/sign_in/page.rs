//! The sign-in pages: small templates embedded in the binary, filled with
//! escaped values. They need no JavaScript; errors are shown in an alert
//! above the form and tied to its fields with `aria-describedby`.

use super::model::AuthorizeParams;

const PAGE: &str = include_str!("templates/page.html");
const PASSWORD: &str = include_str!("templates/password.html");
const SECOND_STEP: &str = include_str!("templates/second_step.html");

/// Where the forms post: the authorize endpoint itself.
pub const ACTION: &str = "/api/v1/oauth/authorize";
/// The sign-in page's cookies (its CSRF token, and a pending link's).
pub const COOKIE_PATH: &str = "/api/v1/oauth";
pub const CSRF_COOKIE: &str = "pillbox_sign_in_csrf";

#[cfg(test)]
#[test]
fn the_action_is_the_authorize_endpoint() {
    assert_eq!(
        ACTION,
        format!(
            "{}{}",
            crate::identity::paths::API_BASE,
            crate::identity::oauth::routes::AUTHORIZE_PATH
        )
    );
    assert_eq!(crate::identity::paths::API_BASE, crate::http::API_PREFIX);
}
const ERROR_ID: &str = "form-error";

/// HTML text and attribute escaping.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page around a form: title, an alert for the error, the body.
pub fn page(title: &str, error: Option<&str>, body: &str) -> String {
    let error = error
        .map(|e| {
            format!(
                "<p class=\"error\" id=\"{ERROR_ID}\" role=\"alert\">{}</p>\n",
                escape(e)
            )
        })
        .unwrap_or_default();
    PAGE.replace("{{title}}", &escape(title))
        .replace("{{error}}", &error)
        .replace("{{body}}", body)
}

/// The hidden fields of a form: the CSRF token, the authorization request,
/// and the step's own (`extra`).
fn hidden(params: &AuthorizeParams, csrf: &str, extra: &[(&str, &str)]) -> String {
    let mut fields: Vec<(&str, &str)> = vec![("csrf_token", csrf)];
    fields.extend(params.pairs());
    fields.extend_from_slice(extra);
    fields
        .iter()
        .map(|(name, value)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                escape(name),
                escape(value)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn described_by(error: Option<&str>) -> String {
    if error.is_some() {
        format!(" aria-describedby=\"{ERROR_ID}\" aria-invalid=\"true\"")
    } else {
        String::new()
    }
}

/// The first step: email and password, and the identity provider's
/// button when one is configured (`provider` is its name).
pub fn password_form(
    params: &AuthorizeParams,
    csrf: &str,
    email: &str,
    error: Option<&str>,
    provider: Option<&str>,
) -> String {
    page(
        "Sign in",
        error,
        &password_body(params, csrf, email, error, provider),
    )
}

/// The first step's forms without the page around them.
pub fn password_body(
    params: &AuthorizeParams,
    csrf: &str,
    email: &str,
    error: Option<&str>,
    provider: Option<&str>,
) -> String {
    let body = PASSWORD
        .replace("{{action}}", ACTION)
        .replace("{{hidden}}", &hidden(params, csrf, &[]))
        .replace("{{email}}", &escape(email))
        .replace("{{describedby}}", &described_by(error));
    match provider {
        Some(name) => format!(
            "{body}\n<form method=\"post\" action=\"{ACTION}\">\n{}\n<input type=\"hidden\" name=\"provider\" value=\"oidc\">\n<p><button type=\"submit\">Sign in with {}</button></p>\n</form>",
            hidden(params, csrf, &[]),
            escape(name)
        ),
        None => body,
    }
}

/// The second step: a TOTP code or a recovery code.
pub fn second_step_form(
    params: &AuthorizeParams,
    csrf: &str,
    pending: &str,
    error: Option<&str>,
) -> String {
    let body = SECOND_STEP
        .replace("{{action}}", ACTION)
        .replace(
            "{{hidden}}",
            &hidden(params, csrf, &[("mfa_token", pending)]),
        )
        .replace("{{describedby}}", &described_by(error));
    page("Two-step verification", error, &body)
}

/// The last step on a link's page: the account signed in, and is asked in
/// words whether the provider's identity may sign in as it from now on.
pub fn confirm_link_form(
    params: &AuthorizeParams,
    csrf: &str,
    (label, secret): (&str, &str),
    provider: &str,
    email: &str,
) -> String {
    let (label, provider, email) = (escape(label), escape(provider), escape(email));
    let body = format!(
        "<p>Link the identity <strong>{label}</strong> at {provider} to your Pillbox account <strong>{email}</strong>?</p>\n\
         <p>Once linked, signing in with {provider} as {label} signs in to this account. Link it only if it is your own identity and you just signed in with {provider} yourself; otherwise choose not to link.</p>\n\
         <form method=\"post\" action=\"{ACTION}\">\n{}\n\
         <p><button type=\"submit\" name=\"link_answer\" value=\"link\">Link {label} and sign in</button></p>\n\
         <p><button type=\"submit\" class=\"secondary\" name=\"link_answer\" value=\"skip\">Do not link, just sign in</button></p>\n</form>",
        hidden(params, csrf, &[("link_confirm", secret)])
    );
    page("Link this identity?", None, &body)
}

/// A page that cannot send the user back to the app (unknown client, a
/// redirect URI that is not registered): never a redirect.
pub fn error_page(message: &str) -> String {
    page(
        "Sign-in cannot continue",
        Some(message),
        "<p>Go back to the app and start signing in again.</p>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}

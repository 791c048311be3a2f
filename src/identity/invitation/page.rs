//! The invitation pages: the landing page with its two forms, the second
//! step, the done page and the page of a link that no longer works. The
//! token travels in a hidden field and the URL only; no page prints it.

use super::Step;
use crate::household::invitations::Invitee;
use crate::identity::sign_in::page::{described_by, escape, page};

const LANDING: &str = include_str!("templates/landing.html");
const DONE: &str = include_str!("templates/done.html");
const INVALID: &str = include_str!("templates/invalid.html");
const SECOND_STEP: &str = include_str!("../sign_in/templates/second_step.html");

/// Where the forms post.
pub const ACTION: &str = "/invitation";

fn hidden(fields: &[(&str, &str)]) -> String {
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

fn role_words(invitee: &Invitee) -> &'static str {
    match invitee.role {
        crate::auth::Role::Owner => "an owner",
        crate::auth::Role::Administrator => "an administrator",
        crate::auth::Role::Member => "a member",
    }
}

/// A button that starts the delegated sign-in, when it is configured.
pub struct ProviderButton<'a> {
    pub name: &'a str,
    pub action: &'a str,
    pub hidden: Vec<(&'a str, &'a str)>,
}

pub fn provider_form(button: &ProviderButton<'_>) -> String {
    format!(
        "<form method=\"post\" action=\"{}\">\n{}\n<p><button type=\"submit\">Sign in with {}</button></p>\n</form>\n",
        escape(button.action),
        hidden(&button.hidden),
        escape(button.name)
    )
}

/// The landing page; `error` belongs to the form of `step`.
pub fn landing(
    invitee: &Invitee,
    token: &str,
    csrf: &str,
    provider: Option<&ProviderButton<'_>>,
    error: Option<(Step, &str)>,
) -> String {
    let on = |step: Step| error.filter(|(s, _)| *s == step).map(|(_, e)| e);
    let create_error = on(Step::Create);
    let provider = provider
        .map(|b| format!("{}<p>Or use your Pillbox password:</p>\n", provider_form(b)))
        .unwrap_or_default();
    let body = LANDING
        .replace("{{action}}", ACTION)
        .replace(
            "{{hidden}}",
            &hidden(&[("csrf_token", csrf), ("token", token)]),
        )
        .replace("{{provider}}", &provider)
        .replace("{{household}}", &escape(&invitee.household_name))
        .replace("{{role}}", role_words(invitee))
        .replace("{{email}}", &escape(&invitee.email))
        .replace(
            "{{create_error_ref}}",
            if create_error.is_some() {
                " form-error"
            } else {
                ""
            },
        )
        .replace(
            "{{create_invalid}}",
            if create_error.is_some() {
                " aria-invalid=\"true\""
            } else {
                ""
            },
        )
        .replace("{{create_described}}", &described_by(create_error))
        .replace("{{sign_in_described}}", &described_by(on(Step::SignIn)));
    page("Join a household", error.map(|(_, e)| e), &body)
}

/// The second step of a sign-in whose account has a second factor.
pub fn second_step(token: &str, csrf: &str, pending: &str, error: Option<&str>) -> String {
    let body = SECOND_STEP
        .replace("{{action}}", ACTION)
        .replace(
            "{{hidden}}",
            &hidden(&[
                ("csrf_token", csrf),
                ("token", token),
                ("mfa_token", pending),
            ]),
        )
        .replace("{{describedby}}", &described_by(error));
    page("Two-step verification", error, &body)
}

pub fn done(household: &str, email: &str) -> String {
    let body = DONE
        .replace("{{household}}", &escape(household))
        .replace("{{email}}", &escape(email));
    page("You have joined", None, &body)
}

/// The page of a link that cannot be used: never why.
pub fn invalid() -> String {
    page(
        "Invitation not valid",
        Some("This invitation link is no longer valid."),
        INVALID,
    )
}

pub fn malformed() -> String {
    page(
        "Invitation",
        Some("The form is malformed. Open the invitation link again."),
        INVALID,
    )
}

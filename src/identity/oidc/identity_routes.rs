//! The account's linked identity-provider identities: listed so a person
//! can see which outside identities sign in as them, and removed one by
//! one. A signed-in user's own session is needed, as for its devices.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get};

use super::model::LinkedIdentity;
use crate::auth::Authenticated;
use crate::error::{ApiError, Result};
use crate::http::extract::PathNumericId;
use crate::http::openapi::{Api, Op};
use crate::http::origin::ClientAddress;
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Linked identities";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get("/auth/linked_identities", "listLinkedIdentities", TAG)
            .summary("The identity-provider identities that sign in as this account")
            .description("Each was linked by signing in with the provider: matched by the email the provider verified, or confirmed by the account after its password and second factor. Needs a signed-in user's access token; an app token is refused with 403.")
            .paginated()
            .errors(&[403])
            .page::<LinkedIdentity>(),
        get(list),
    )
    .route_numeric(
        Op::delete("/auth/linked_identities/{id}", "deleteLinkedIdentity", TAG)
            .summary("Unlink an identity: it no longer signs in as this account")
            .description("Audited, and told to the account's email when the server sends mail. Signing in with the provider afterwards matches the account again only by a verified email, or by linking anew.")
            .errors(&[403, 404])
            .no_content(),
        delete(remove),
    )
}

async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    page: std::result::Result<Paged, ApiError>,
) -> Result<Response> {
    crate::identity::sessions::require_session(&auth)?;
    let (Paged(page, _), account_id) = (page?, auth.account_id);
    let (items, total) = state
        .db
        .read(move |conn| super::linked_identities(conn, account_id, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn remove(
    State(state): State<AppState>,
    auth: Authenticated,
    PathNumericId(id): PathNumericId,
    ClientAddress(address): ClientAddress,
) -> Result<Response> {
    crate::identity::sessions::require_session(&auth)?;
    let (account_id, mail_on) = (auth.account_id, crate::mail::configured(&state));
    state
        .db
        .write(move |tx| super::unlink_identity(tx, account_id, id, &address, mail_on))
        .await?;
    Ok(respond::no_content())
}

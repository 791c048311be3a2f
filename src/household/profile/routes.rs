//! Profile handlers: parse, call the rule, shape the response.

use axum::body::Body;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, put};

use super::MAX_AVATAR_BYTES;
use super::model::{Profile, ProfileBody, avatar_upload_schema};
use crate::auth::{AccessLevel, Actor};
use crate::error::{ApiError, Result};
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Profile";
const PROFILE: &str = "/households/{household_id}/profile";
const AVATAR: &str = "/households/{household_id}/profile/avatar";
/// The avatar upload's whole body: the file plus room for the multipart framing.
const AVATAR_BODY_LIMIT: usize = MAX_AVATAR_BYTES + 64 * 1024;
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp"];

pub fn routes(api: Api) -> Api {
    api.schema("ProfileAvatarUpload", avatar_upload_schema())
        .route(
            Op::get(PROFILE, "getProfile", TAG)
                .summary("Your profile: the person linked to your membership and your account's preferences")
                .description("404 when no person is linked to your membership. Needs current view access to that person.")
                .ok::<Profile>(),
            get(show),
        )
        .route(
            Op::patch(PROFILE, "updateProfile", TAG)
                .summary("Update your profile")
                .description("date_of_birth is saved on your linked person, the other fields on your account, both in one transaction. Unknown fields (including email and roles) are refused. Needs manage access to your linked person; online only.")
                .body::<ProfileBody>()
                .ok::<Profile>(),
            patch(update),
        )
        .route(
            Op::put(AVATAR, "replaceProfileAvatar", TAG)
                .summary("Upload or replace your avatar")
                .description("multipart/form-data with one file part named `avatar`: a PNG, JPEG or WebP image of at most 5 MiB, recognised by its content. An invalid upload keeps the existing image. Needs manage access to your linked person.")
                .multipart_body("ProfileAvatarUpload")
                .ok::<Profile>(),
            put(replace_avatar).layer(DefaultBodyLimit::max(AVATAR_BODY_LIMIT)),
        )
        .route(
            Op::get(AVATAR, "getProfileAvatar", TAG)
                .summary("Your avatar image")
                .description("Streams the stored image after checking current view access to your linked person; never a public or presigned URL. Sent with Cache-Control: no-store.")
                .binary_ok(IMAGE_TYPES),
            get(show_avatar),
        )
        .route(
            Op::delete(AVATAR, "deleteProfileAvatar", TAG)
                .summary("Remove your avatar")
                .description("204 also when there was none. Needs manage access to your linked person.")
                .no_content(),
            delete(remove_avatar),
        )
}

async fn show(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let profile = state.db.read(move |conn| super::get(conn, &actor)).await?;
    Ok(respond::ok(profile))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<ProfileBody>,
) -> Result<Response> {
    let profile = state
        .db
        .write(move |conn| super::update(conn, &actor, body.profile))
        .await?;
    Ok(respond::ok(profile))
}

async fn replace_avatar(
    State(state): State<AppState>,
    actor: Actor,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<Response> {
    // Refuse before taking in up to 5 MiB from someone who may not change it.
    let check = actor.clone();
    state
        .db
        .read(move |conn| super::linked_person(conn, &check, AccessLevel::Manage).map(drop))
        .await?;
    let multipart = multipart.map_err(|_| {
        ApiError::invalid(
            "avatar",
            "must be sent as multipart/form-data with a file part named avatar",
        )
    })?;
    let data = read_avatar(multipart).await?;
    let profile = state
        .db
        .write(move |conn| super::replace_avatar(conn, &actor, data))
        .await?;
    Ok(respond::ok(profile))
}

/// The bytes of the one file part, `avatar`, stopping as soon
/// as it passes the size limit.
async fn read_avatar(mut multipart: Multipart) -> Result<Vec<u8>> {
    let mut found: Option<Vec<u8>> = None;
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        let name = field.name().unwrap_or_default().to_string();
        if name != "avatar" {
            let name = if name.is_empty() { "body" } else { &name };
            return Err(ApiError::invalid(
                name,
                "is not a recognised part; send one file part named avatar",
            ));
        }
        if found.is_some() {
            return Err(ApiError::invalid("avatar", "must be a single file"));
        }
        let mut data = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            if data.len() + chunk.len() > MAX_AVATAR_BYTES {
                return Err(ApiError::PayloadTooLarge(MAX_AVATAR_BYTES));
            }
            data.extend_from_slice(&chunk);
        }
        found = Some(data);
    }
    found.ok_or_else(|| ApiError::invalid("avatar", "is required"))
}

fn multipart_error(err: MultipartError) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(MAX_AVATAR_BYTES)
    } else {
        ApiError::invalid("avatar", "could not be read as multipart/form-data")
    }
}

async fn show_avatar(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let avatar = state
        .db
        .read(move |conn| super::avatar(conn, &actor))
        .await?;
    let content_type = HeaderValue::from_str(&avatar.content_type)
        .map_err(|_| ApiError::internal("stored avatar has an invalid content type"))?;
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from(avatar.data),
    )
        .into_response())
}

async fn remove_avatar(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    state
        .db
        .write(move |conn| super::delete_avatar(conn, &actor))
        .await?;
    Ok(respond::no_content())
}

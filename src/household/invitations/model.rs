//! Invitation API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::{AccessLevel, Permissions, Role};
use crate::domain::Timestamp;
use crate::domain::vocabulary;
use crate::household::grants::Relationship;
use crate::household::people::model::{PersonAttributes, PersonName, PersonType};
use crate::http::openapi;

vocabulary!(
    /// Where an invitation stands: `expired` is a pending one past its expiry.
    InvitationStatus {
        Pending => "pending",
        Expired => "expired",
        Accepted => "accepted",
    }
);

vocabulary!(
    /// How the invitation reaches the invitee: `queued` for the mail outbox,
    /// `link` when email delivery is off and the administrator passes the
    /// link on.
    Delivery {
        Queued => "queued",
        Link => "link",
    }
);

/// The person an accepted invitation creates and links to the new member.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InvitedPerson")]
pub struct NewPerson {
    pub name: PersonName,
    #[schemars(with = "openapi::Date")]
    pub date_of_birth: Date,
    /// Defaults from date_of_birth and has_capacity, as for createPerson
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_type: Option<PersonType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_capacity: Option<bool>,
}

impl NewPerson {
    pub fn attributes(&self) -> PersonAttributes {
        PersonAttributes {
            name: Some(Some(self.name.clone())),
            email: None,
            date_of_birth: Some(Some(self.date_of_birth)),
            person_type: self.person_type.map(Some),
            has_capacity: self.has_capacity.map(Some),
        }
    }
}

/// A person access grant the new member receives on acceptance.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InvitedPersonAccessGrant")]
pub struct InvitedGrant {
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    pub access_level: AccessLevel,
    /// Not self: the member's own person gets its self grant through the link
    pub relationship_type: Relationship,
}

// An invitation as administrators see it: never its token.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Invitation {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub role: Role,
    pub permissions: Permissions,
    /// The existing person the member will be linked to, or null when `person` is created
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<i64>,
    /// The person created on acceptance, or null when `person_id` is linked
    pub person: Option<NewPerson>,
    pub person_access_grants: Vec<InvitedGrant>,
    pub status: InvitationStatus,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub created_by_membership_id: Option<i64>,
    /// The membership made by accepting it
    #[schemars(with = "Option<openapi::NumericId>")]
    pub accepted_membership_id: Option<i64>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub accepted_at: Option<Timestamp>,
}

// Returned once, at creation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CreatedInvitation {
    #[serde(flatten)]
    pub invitation: Invitation,
    pub delivery: Delivery,
    /// The invitation link, present only when delivery is `link` and only in this response; it is useless without signing in as the invited email
    pub accept_url: Option<String>,
}

// The answer to a resend: the new token went to the mail outbox.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ResentInvitation {
    #[serde(flatten)]
    pub invitation: Invitation,
    pub delivery: Delivery,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct InvitationAttributes {
    #[schemars(extend("format" = "email", "maxLength" = crate::household::people::model::MAX_EMAIL))]
    pub email: String,
    /// Only an owner may invite an owner
    pub role: Role,
    #[serde(default)]
    pub inventory_management: bool,
    #[serde(default)]
    pub location_management: bool,
    #[serde(default)]
    pub adult_review: bool,
    /// An existing person of the household, not linked to a member; exactly one of person_id and person
    #[serde(default)]
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<i64>,
    /// A person to create on acceptance; exactly one of person_id and person
    #[serde(default)]
    pub person: Option<NewPerson>,
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub person_access_grants: Vec<InvitedGrant>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InvitationCreateRequest")]
pub struct InvitationBody {
    pub household_invitation: InvitationAttributes,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InvitationAcceptRequest")]
pub struct AcceptBody {
    /// The token from the invitation link
    #[schemars(length(min = 1, max = 200))]
    pub token: String,
}

// The membership an accepted invitation made; clients then reload /auth/households.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AcceptedInvitation {
    #[schemars(with = "openapi::NumericId")]
    pub household_id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    pub role: Role,
    /// The member's own person
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<i64>,
}

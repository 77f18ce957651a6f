//! `POST /console/reveal`: the console's reveal page trades a one-time token for the secret it
//! holds ([`crate::http::reveals`]): once, within `mcp.secret_reveal_ttl_secs`. The token is the
//! only credential: whoever holds the link may see the secret, once, and nobody after. The answer
//! is `no-store`, never replayed from the idempotency store, and the journal keeps neither the
//! token nor the secret (both are redacted like every credential).

use crate::http::reveals::{self, Refused};
use crate::http::{ApiError, Ctx, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![named_body::<RevealRequest>(), named_response::<Revealed>()]
}

/// The token of a one-time reveal link.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SecretRevealRequest")]
struct RevealRequest {
    /// What follows `#` in the link (`/console/reveal#…`).
    #[schemars(length(min = 1, max = 200))]
    token: String,
}

/// The object a secret belongs to.
#[derive(Serialize, JsonSchema)]
struct Subject {
    #[serde(rename = "type")]
    kind: String,
    id: String,
}

/// A secret, shown this once.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SecretReveal")]
struct Revealed {
    #[schemars(extend("const" = "secret_reveal"))]
    object: &'static str,
    subject: Subject,
    /// The field of the object the secret is (`secret`).
    field: String,
    secret: String,
    /// How long the previous secret keeps working beside this one, in words.
    grace: Option<String>,
}

pub fn redeem(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: RevealRequest = ctx.json()?;
    let store = reveals::of(ctx.app)
        .ok_or_else(|| ApiError::Internal("the reveal store is not registered".into()))?;
    let (subject, secret) = store.reveal(input.token.trim()).map_err(|why| {
        let detail = match why {
            Refused::Revealed => "This link was already opened: its secret was shown once and is not shown again. If that was not you, rotate the secret again.",
            Refused::Expired => "This link has expired (or never existed): its secret is no longer held. Rotate the secret again for a new one.",
        };
        ApiError::Gone {
            code: "secret_reveal_gone",
            detail: detail.into(),
        }
    })?;
    Ok(Response::ok(&Revealed {
        object: "secret_reveal",
        subject: Subject {
            kind: subject.kind,
            id: subject.id,
        },
        field: subject.field,
        secret,
        grace: subject.grace,
    })
    .with_header("cache-control", "no-store"))
}

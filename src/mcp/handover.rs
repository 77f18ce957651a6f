//! A secret a confirmed change made (a rotated or first webhook secret) goes to the person, never
//! to the model: [`hold`] keeps it for a one-time reveal ([`crate::http::reveals`]) and puts the
//! link in `withheld.reveal`. Then either the person's client opens a link dialog (URL-mode
//! elicitation, [`super::elicitation::hand_over`]) and the result keeps only that it was offered,
//! or the result carries the link with words telling the assistant to pass it on. The secret
//! itself is in no result, journal entry, idempotency record or log.

use super::call::Caller;
use super::envelope::Reveal;
use crate::http::reveals::{self, Subject};
use crate::http::App;
use serde_json::Value;
use std::time::Duration;

/// What the assistant is told to do with the link when it has to carry it.
const PASS_ON: &str = "Give this link to the user as it is, and say it shows the new secret to them once, until `expires_at`. Do not open it, fetch it or repeat it elsewhere: whoever opens it first sees the secret, and nobody after.";
/// What the result says when the person's client showed the link instead.
const OFFERED: &str = "The link to the new secret was shown to the user by their MCP client (a URL-mode elicitation), not to you. Tell them to open it before `expires_at` if they have not; it works once.";

/// Holds `secret` for the person: the link to it, with words telling the assistant to pass it on.
/// Without a console (`console.enabled = false`) or room in the store, nothing is held and the
/// note stands alone.
pub(super) fn hold(app: &App, secret: String, subject: Subject) -> Option<Reveal> {
    if !app.settings.console_enabled {
        return None;
    }
    let store = reveals::of(app)?;
    let ttl = app.settings.mcp_secret_reveal_ttl_secs;
    let token = store.hold(secret, subject, Duration::from_secs(ttl))?;
    Some(Reveal {
        url: Some(reveals::url(&app.settings, &token)),
        expires_at: crate::time::rfc3339(crate::time::wall_now() + ttl as i64),
        instructions: PASS_ON,
    })
}

/// The link of a result that carries one.
pub(super) fn link(answer: &Value) -> Option<&str> {
    answer["withheld"]["reveal"]["url"].as_str()
}

/// `answer` with its link taken out, once the person's client has shown it to them.
pub(super) fn offered(mut answer: Value) -> Value {
    if let Some(reveal) = answer["withheld"]["reveal"].as_object_mut() {
        reveal.remove("url");
        reveal.insert("instructions".into(), Value::from(OFFERED));
    }
    answer
}

/// Whether this caller's client can show a link itself: URL-mode elicitation (2025-11-25) in a
/// session (the call must also read event streams).
pub(super) fn client_shows_links(caller: &Caller) -> bool {
    caller.features.elicitation_url && caller.session.is_some() && caller.version == "2025-11-25"
}

/// The question the person's client shows with the link.
pub(super) fn message(answer: &Value) -> String {
    let target = &answer["target"];
    format!(
        "Your assistant's change made a new secret for the {} {}. It is not given to the assistant: open this one-time page to see it (once, until {}), then give it to the system that needs it.",
        target["type"].as_str().unwrap_or("object").replace('_', " "),
        target["id"].as_str().unwrap_or(""),
        answer["withheld"]["reveal"]["expires_at"]
            .as_str()
            .unwrap_or("it expires")
    )
}

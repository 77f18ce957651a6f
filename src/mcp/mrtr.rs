//! Confirmation by elicitation on protocol 2026-07-28: the multi round-trip (MRTR, SEP-2322;
//! specification "Multi Round-Trip Requests").
//!
//! That revision has no server-to-client request on a POST, so `confirm_change` from a client
//! that declared form elicitation (in the request's `_meta` client capabilities) answers with an
//! `InputRequiredResult`: `resultType: "input_required"`, one `elicitation/create` request under
//! `inputRequests.confirm_change`, and a `requestState`. The client asks its user, then retries
//! the same `tools/call` (new JSON-RPC id, same arguments) with `inputResponses.confirm_change`
//! (an `ElicitResult`) and the `requestState` echoed unchanged. Accept runs the ordinary
//! confirmation (exactly once: the confirmation id is single-use); decline and cancel cancel the
//! change. Nothing is kept on the server between the two legs but the pending change itself.
//!
//! `requestState` is attacker-controlled input, so it is signed ([`super::request_state`]):
//! `base64url(claims) "." base64url(HMAC-SHA256)` under a secret drawn from the operating system
//! when the server starts (never from a sandbox seed, never stored). The claims name the API key
//! and client the question was asked of, a digest of the change (never its confirmation id), and
//! the expiry; nothing secret. A retry whose state fails the MAC, names another key or change, has expired, or whose
//! change is no longer pending (answered already: replay) is refused with JSON-RPC error -32602
//! and `data.reason`; nothing runs.

use super::call::Caller;
use super::elicitation;
use super::failure::Failure;
use super::pending;
use super::protocol::{self, RpcError};
use super::request_state::{change_ref, Claims};
use super::state;
use crate::http::App;
use serde_json::{json, Map, Value};

/// The key of the one question in `inputRequests` / `inputResponses`.
pub const QUESTION: &str = "confirm_change";
/// What `confirm_change` does with this request on 2026-07-28.
pub enum Step {
    /// Confirm as usual: no round trip applies, or the user accepted (the state verified).
    Proceed,
    /// Answer with this result now: the question (`InputRequiredResult`).
    Ask(Value),
    /// The retry is refused (its state or answers); nothing ran.
    Invalid(RpcError),
    /// The user declined or dismissed the dialog: the change is cancelled; this is the result.
    NotAccepted(Failure),
}

fn refuse(reason: &str, message: impl Into<String>) -> Step {
    Step::Invalid(
        RpcError::invalid_params(message).with_data(json!({"reason": reason, "applied": false})),
    )
}

/// Decides one `confirm_change` call of the 2026-07-28 era (`params` are the `tools/call` params).
pub fn confirm_step(
    app: &App,
    caller: &Caller,
    params: &Map<String, Value>,
    confirmation_id: &str,
) -> Step {
    let state = params.get("requestState");
    let responses = params.get("inputResponses").filter(|v| !v.is_null());
    let Some(state) = state.filter(|v| !v.is_null()) else {
        if responses.is_some() {
            return refuse(
                "request_state_missing",
                "`inputResponses` came without `requestState`: echo the requestState of the input_required result unchanged with the answers. Nothing was applied.",
            );
        }
        // A first call: ask, if the client can show the question and the change is pending
        // (otherwise the ordinary confirmation explains what is wrong with the id).
        if !caller.features.elicitation_form {
            return Step::Proceed;
        }
        return ask(app, caller, confirmation_id).map_or(Step::Proceed, Step::Ask);
    };
    let signer = &state::state(app).request_states;
    let Some(claims) = state.as_str().and_then(|s| signer.open(s)) else {
        return refuse(
            "request_state_invalid",
            "`requestState` was not issued by this server or was modified; it is refused and nothing was applied. Call confirm_change without requestState to ask the user again.",
        );
    };
    let p = &caller.principal;
    if claims.k != p.actor_id() || claims.c.as_deref() != p.client_id() {
        return refuse(
            "request_state_other_key",
            "This `requestState` was issued to another API key or client: only the credential whose user was asked may answer. Nothing was applied.",
        );
    }
    if claims.ch != change_ref(confirmation_id) {
        return refuse(
            "request_state_other_change",
            "This `requestState` answers the question about another change, not this confirmation_id. Nothing was applied.",
        );
    }
    let now = caller.now();
    if claims.exp <= now {
        return refuse(
            "request_state_expired",
            format!(
                "This `requestState` expired at {}: the answer is too old to act on, and nothing was applied. Call confirm_change again without requestState to ask the user again.",
                crate::time::rfc3339(claims.exp)
            ),
        );
    }
    if elicitation::pending_change(caller, confirmation_id).is_none() {
        // Answered already (a replay), cancelled, expired or gone: say which.
        let why = pending::unavailable(caller, confirmation_id);
        return refuse(
            "request_state_used",
            format!(
                "This `requestState` can no longer be answered: {}",
                why.message
            ),
        );
    }
    let answer = responses.and_then(|r| r.get(QUESTION));
    let Some(answer) = answer else {
        // The client did not answer the question: ask it again (MRTR "Error Handling").
        if !caller.features.elicitation_form {
            return refuse(
                "input_response_missing",
                format!("`inputResponses.{QUESTION}` (the user's answer) is missing. Nothing was applied."),
            );
        }
        return ask(app, caller, confirmation_id).map_or(Step::Proceed, Step::Ask);
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => Step::Proceed,
        Some(action @ ("decline" | "cancel")) => Step::NotAccepted(elicitation::not_accepted(
            caller,
            confirmation_id,
            action == "decline",
        )),
        _ => refuse(
            "input_response_invalid",
            format!("`inputResponses.{QUESTION}` must be an ElicitResult whose `action` is accept, decline or cancel. Nothing was applied."),
        ),
    }
}

/// The `InputRequiredResult` asking the user about the pending change; `None` when the change is
/// not pending for this caller or no state can be signed.
fn ask(app: &App, caller: &Caller, confirmation_id: &str) -> Option<Value> {
    let change = elicitation::pending_change(caller, confirmation_id)?;
    let p = &caller.principal;
    let claims = Claims {
        k: p.actor_id().to_string(),
        c: p.client_id().map(String::from),
        ch: change_ref(confirmation_id),
        exp: change
            .expires_at
            .min(caller.now() + elicitation::MAX_WAIT_SECS),
    };
    let state = state::state(app).request_states.sign(&claims)?;
    Some(json!({
        "resultType": "input_required",
        "inputRequests": {QUESTION: {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": elicitation::message(&change),
            "requestedSchema": elicitation::form_schema(),
        }}},
        "requestState": state,
        "_meta": {protocol::META_SERVER_INFO: protocol::server_info()},
    }))
}

//! Confirmation by elicitation (MCP 2025-11-25, `elicitation/create` in form mode): when a client
//! that declared the capability calls `confirm_change`, the server asks the user itself, through
//! the client, before anything runs. Accept executes the change; decline and cancel cancel it;
//! no answer within the wait leaves it unconfirmed (the confirmation id stays valid).
//!
//! The assistant can no longer confirm on its own: the question and the answer go between the
//! server and the person, in the client's own dialog. Clients without the capability keep the
//! two-step tools as they are. The 2026-07-28 era has no server-to-client request on a POST: it
//! asks the same question by a multi round-trip instead ([`super::mrtr`]).
//!
//! On the wire (Streamable HTTP): the `confirm_change` POST is answered with an event stream whose
//! first event is the `elicitation/create` request. The client POSTs its answer (a JSON-RPC
//! response, same session and credential); that POST runs the confirmation, as that caller, and
//! the result is the stream's second and last event. Comments keep the stream alive meanwhile.
//!
//! A confirmed change that made a secret ([`handover`]) asks one more question on the same
//! stream, or on a stream of its own when the call was confirmed without a dialog: a URL-mode
//! `elicitation/create` whose link shows the person the secret, once. Only what the client did
//! with it reaches the result.

use super::call::Caller;
use super::confirm::confirm;
use super::failure::Failure;
use super::handover;
use super::pending;
use super::questions::{Next, Purpose, Question, Waiting};
use super::reply::Out;
use super::sse;
use super::state::state;
use crate::http::stream::Streamed;
use crate::http::App;
use crate::redact;
use bytes::Bytes;
use rusqlite::OptionalExtension;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long the server waits for the user's answer (at most; never past the change's expiry).
pub(super) const MAX_WAIT_SECS: i64 = 300;
/// A comment at least this often keeps proxies and the idle timeout from closing the stream.
const KEEPALIVE_MS: u64 = 3_000;
/// Questions waiting at once, over all clients.
const MAX_WAITING: usize = 1_000;

/// What the user is asked about: the stored change, if this caller may still confirm it.
pub(super) struct Pending {
    tool: String,
    target_type: String,
    target_id: String,
    /// The change in words, as its preview showed it ([`super::summary`]).
    summary: Option<String>,
    pub(super) expires_at: i64,
}

pub(super) fn pending_change(caller: &Caller, confirmation_id: &str) -> Option<Pending> {
    let p = &caller.principal;
    let conn = caller.db.conn().ok()?;
    let row = conn.prepare_cached(
        "SELECT tool, target_type, target_id, summary, expires_at FROM mcp_pending_changes
         WHERE id_hash = ?1 AND actor = ?2 AND client_id IS ?3 AND used_at IS NULL AND expires_at > ?4",
    )
    .ok()?
    .query_row(
        rusqlite::params![
            crate::auth::keys::hash(confirmation_id),
            p.actor_id(),
            p.client_id(),
            caller.now()
        ],
        |r| {
            Ok(Pending {
                tool: r.get(0)?,
                target_type: r.get(1)?,
                target_id: r.get(2)?,
                summary: r.get(3)?,
                expires_at: r.get(4)?,
            })
        },
    )
    .optional()
    .ok()
    .flatten();
    row
}

/// The form a confirmation asks the user to submit: no field at all (the user accepts or
/// declines the change itself). MCP's restricted form schema, which no Rust type of ours holds.
pub(super) fn form_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The question, in words the user can check against what they asked for: the change as its
/// preview said it (the objects and company by name, what changes, the price in currency units,
/// the balance after, every side effect). The change runs only while all of it still holds.
pub(super) fn message(c: &Pending) -> String {
    let what = match &c.summary {
        Some(words) if !words.is_empty() => words.clone(),
        _ => format!(
            "{} of {} {}.",
            c.tool
                .strip_prefix("prepare_")
                .unwrap_or(&c.tool)
                .replace('_', " "),
            c.target_type,
            c.target_id
        ),
    };
    let text = format!(
        "Your assistant asks to make this change: {what} Nothing happens unless you accept, and nothing happens if any of this has changed by then. Accept to apply it now, decline to cancel it."
    );
    redact::redact_str(&text).into_owned()
}

/// The `n`th message event of the stream answering request `stream` ([`super::sse`]).
fn event(stream: &str, n: u32, message: &Value) -> Bytes {
    Bytes::from(sse::message(stream, n, &message.to_string()))
}

fn tool_result(outcome: Result<Value, Failure>) -> Value {
    match outcome {
        Ok(mut v) => {
            redact::redact_value(&mut v);
            // Fenced as every other tool result: tenant text in the outcome is data.
            let text = super::fence::framed(
                &super::fence::result_preamble("confirm_change"),
                &v.to_string(),
            );
            json!({"content": [{"type": "text", "text": text}], "structuredContent": v, "isError": false})
        }
        Err(failure) => {
            let text = redact::redact_str(&failure.text()).into_owned();
            let mut structured = failure.structured(&text);
            redact::redact_value(&mut structured);
            json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": true})
        }
    }
}

/// Asks the user to confirm, when this call can: the client declared form elicitation, its
/// session is known, it reads event streams, and the change is still pending for this caller.
/// `None`: confirm as usual.
pub fn ask(app: &App, caller: &Caller, call_id: &Value, confirmation_id: &str) -> Option<Out> {
    caller.session.as_ref()?;
    // Elicitation came with 2025-06-18; 2025-03-26 (the only era with batches) never asks.
    if !caller.features.elicitation_form || !caller.accepts_sse || caller.version == "2025-03-26" {
        return None;
    }
    let change = pending_change(caller, confirmation_id)?;
    let wait = (change.expires_at - caller.now()).clamp(1, MAX_WAIT_SECS) as u64;
    let text = format!("The user did not answer the confirmation dialog within {wait} seconds, so nothing was applied. The confirmation id stays valid until it expires: ask the user, then call confirm_change again, or cancel_change.");
    let question = register(
        app,
        caller,
        Purpose::Confirm(confirmation_id.to_string()),
        |id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"mode": "form", "message": message(&change),
                "requestedSchema": form_schema()}})
        },
        tool_result(Err(Failure::new("confirmation_unanswered", 408, text))),
        wait,
    )?;
    converse(app, caller, call_id, question)
}

/// A confirmed change's result that carries a link to a secret ([`handover`]): when the client
/// shows links itself (URL-mode elicitation), the call is answered with an event stream that
/// asks it to, and the result keeps only that the link was offered. `None`: the result is sent
/// as it is, link and words for the assistant included.
pub fn hand_over(app: &App, caller: &Caller, call_id: &Value, answer: &Value) -> Option<Out> {
    if !caller.accepts_sse || !handover::client_shows_links(caller) {
        return None;
    }
    let question = link_question(app, caller, answer)?;
    converse(app, caller, call_id, question)
}

/// The URL-mode question that shows the person the link of `answer`.
fn link_question(app: &App, caller: &Caller, answer: &Value) -> Option<Question> {
    let url = handover::link(answer)?.to_string();
    let elicitation_id = format!(
        "reveal_{}",
        crate::random::base62(caller.seeded, "elicitation", 24)
    );
    let message = handover::message(answer);
    let wait = (MAX_WAIT_SECS as u64).min(app.settings.mcp_secret_reveal_ttl_secs);
    register(
        app,
        caller,
        Purpose::Link(answer.clone()),
        |id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"mode": "url", "elicitationId": elicitation_id, "url": url,
                "message": message}})
        },
        // Nobody answered: the assistant carries the link after all.
        tool_result(Ok(answer.clone())),
        wait,
    )
}

/// Registers a question of this caller's session; its request is built around its id.
fn register(
    app: &App,
    caller: &Caller,
    purpose: Purpose,
    request: impl FnOnce(&str) -> Value,
    on_timeout: Value,
    wait_secs: u64,
) -> Option<Question> {
    let session = caller.session.clone()?;
    let registry = &state(app).elicitations;
    let id = format!(
        "elicit_{}",
        crate::random::base62(caller.seeded, "elicitation", 24)
    );
    let (done, answered) = oneshot::channel();
    let mut map = registry.0.lock().ok()?;
    if map.len() >= MAX_WAITING {
        return None;
    }
    let p = &caller.principal;
    map.insert(
        id.clone(),
        Waiting {
            actor: p.actor_id().to_string(),
            client_id: p.client_id().map(String::from),
            session,
            purpose,
            done,
        },
    );
    Some(Question {
        request: request(&id),
        id,
        answered,
        on_timeout,
        wait_secs,
    })
}

/// Answers the call with an event stream: the question, then (after the answer) the next
/// question or the result. Comments keep the stream alive while the user decides.
fn converse(app: &App, caller: &Caller, call_id: &Value, first: Question) -> Option<Out> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let registry = state(app).elicitations.clone();
    let call_id = call_id.clone();
    // Well inside the server's own idle timeout, whatever it is set to.
    let keepalive = Duration::from_millis(
        KEEPALIVE_MS
            .min(app.settings.idle_timeout_secs * 1000 / 3)
            .max(200),
    );
    let (tx, body) = Streamed::channel(4);
    let stream = caller.request_id.clone();
    runtime.spawn(async move {
        let result_event = |n: u32, result: Value| {
            event(
                &stream,
                n,
                &json!({"jsonrpc": "2.0", "id": call_id, "result": result}),
            )
        };
        if tx.send(Bytes::from(sse::priming(&stream))).await.is_err() {
            registry.take(&first.id);
            return;
        }
        let mut n = 1;
        let mut question = first;
        'asking: loop {
            if tx.send(event(&stream, n, &question.request)).await.is_err() {
                registry.take(&question.id);
                return;
            }
            n += 1;
            let deadline = tokio::time::sleep(Duration::from_secs(question.wait_secs));
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    biased;
                    next = &mut question.answered => {
                        match next {
                            Ok(Next::Done(result)) => {
                                let _ = tx.send(result_event(n, result)).await;
                                return;
                            }
                            Ok(Next::Ask(q)) => {
                                question = q;
                                continue 'asking;
                            }
                            Err(_) => return,
                        }
                    }
                    _ = &mut deadline => {
                        // Unless the answer is being run right now, nobody answered in time.
                        if registry.take(&question.id).is_some() {
                            let result = std::mem::take(&mut question.on_timeout);
                            let _ = tx.send(result_event(n, result)).await;
                            return;
                        }
                        deadline.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(60));
                    }
                    _ = tokio::time::sleep(keepalive) => {
                        if tx.send(Bytes::from_static(b": waiting for the user\n\n")).await.is_err() {
                            // The client went away: a change stays pending, unconfirmed.
                            registry.take(&question.id);
                            return;
                        }
                    }
                }
            }
        }
    });
    let mut out = Out::new(200, String::new());
    out.stream = Some(body);
    Some(out)
}

/// A client's JSON-RPC response: if it answers one of our questions, asked of this caller in
/// this session, acts on it and tells the waiting stream what comes next.
pub fn answer(app: &App, caller: &Caller, msg: &Value) {
    let Some(id) = msg.get("id").and_then(Value::as_str) else {
        return;
    };
    let registry = &state(app).elicitations;
    let p = &caller.principal;
    let mine = registry.0.lock().ok().is_some_and(|m| {
        m.get(id).is_some_and(|w| {
            w.actor == p.actor_id()
                && w.client_id.as_deref() == p.client_id()
                && caller.session.as_deref() == Some(w.session.as_str())
        })
    });
    // Another credential's or session's answer is ignored: it cannot decide for this user.
    let Some(w) = mine.then(|| registry.take(id)).flatten() else {
        return;
    };
    let next = match w.purpose {
        Purpose::Confirm(confirmation_id) => {
            confirmed(app, caller, msg, &w.session, &confirmation_id)
        }
        Purpose::Link(answer) => {
            if msg.get("error").is_some() {
                // The client could not show the link; it is not asked to again in this session.
                let sessions = &state(app).sessions;
                let mut features = sessions.features(&w.session);
                features.elicitation_url = false;
                sessions.set_features(&w.session, features);
            }
            // Shown to the user: the result keeps only that. Declined, dismissed or not shown:
            // the assistant carries the link after all, the secret still out of its reach.
            let answer = match msg["result"]["action"].as_str() {
                Some("accept") => handover::offered(answer),
                _ => answer,
            };
            Next::Done(tool_result(Ok(answer)))
        }
    };
    let _ = w.done.send(next);
}

/// What follows the user's answer to a confirmation question: the change's result, or (when it
/// made a secret and the client shows links) the question that shows the user its link.
fn confirmed(
    app: &App,
    caller: &Caller,
    msg: &Value,
    session: &str,
    confirmation_id: &str,
) -> Next {
    let outcome = if let Some(e) = msg.get("error") {
        // The client could not ask; it is not asked again in this session.
        let sessions = &state(app).sessions;
        let mut features = sessions.features(session);
        features.elicitation_form = false;
        sessions.set_features(session, features);
        Err(Failure::new(
            "elicitation_unavailable",
            409,
            format!(
                "The client could not show the confirmation dialog ({}), so nothing was applied. Ask the user in the chat; if they confirm, call confirm_change again with the same id.",
                e["message"].as_str().unwrap_or("error")
            ),
        ))
    } else {
        match msg["result"]["action"].as_str() {
            Some("accept") => confirm(app, caller, confirmation_id),
            action => Err(not_accepted(
                caller,
                confirmation_id,
                action == Some("decline"),
            )),
        }
    };
    if let Ok(answer) = &outcome {
        if handover::client_shows_links(caller) {
            if let Some(question) = link_question(app, caller, answer) {
                return Next::Ask(question);
            }
        }
    }
    Next::Done(tool_result(outcome))
}

/// The user declined (or dismissed the dialog): the change is cancelled, and the refusal says so.
pub(super) fn not_accepted(caller: &Caller, confirmation_id: &str, declined: bool) -> Failure {
    let _ = pending::cancel(caller, confirmation_id);
    if declined {
        Failure::new("confirmation_declined", 409, "The user declined the change in the confirmation dialog: nothing was applied and the change is cancelled.")
    } else {
        Failure::new("confirmation_cancelled", 409, "The user dismissed the confirmation dialog: nothing was applied and the change is cancelled. Prepare it again if they still want it.")
    }
}

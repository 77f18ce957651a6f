//! The confirmation questions sent to clients (`elicitation/create`) and waiting for the user's
//! answer, by request id: data only, kept in the server state. [`super::elicitation`] asks and
//! answers them; this file imports no sibling.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// A question sent, waiting for its answer.
pub(super) struct Waiting {
    pub(super) actor: String,
    pub(super) client_id: Option<String>,
    pub(super) session: String,
    pub(super) purpose: Purpose,
    pub(super) done: oneshot::Sender<Next>,
}

/// What a question is for.
pub(super) enum Purpose {
    /// Confirm this change (its confirmation id) if the user accepts.
    Confirm(String),
    /// Show the user a link to a secret: this result (which carries the link) is the call's,
    /// unless the client showed it.
    Link(Value),
}

/// What the stream answering the call sends next.
pub(super) enum Next {
    /// The call's result: the stream's last event.
    Done(Value),
    /// Another question on the same stream.
    Ask(Question),
}

/// A question to send, and what follows it.
pub(super) struct Question {
    /// The id of the `elicitation/create` request (the key of [`Registry`]).
    pub(super) id: String,
    pub(super) request: Value,
    pub(super) answered: oneshot::Receiver<Next>,
    /// The call's result if nobody answers within `wait_secs`.
    pub(super) on_timeout: Value,
    pub(super) wait_secs: u64,
}

/// The questions waiting for an answer, by the id of the `elicitation/create` request.
#[derive(Clone, Default)]
pub struct Registry(pub(super) Arc<Mutex<HashMap<String, Waiting>>>);

impl Registry {
    pub(super) fn take(&self, id: &str) -> Option<Waiting> {
        self.0.lock().ok()?.remove(id)
    }
}

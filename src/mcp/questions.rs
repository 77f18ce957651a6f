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
    pub(super) confirmation_id: String,
    pub(super) done: oneshot::Sender<Value>,
}

/// The questions waiting for an answer, by the id of the `elicitation/create` request.
#[derive(Clone, Default)]
pub struct Registry(pub(super) Arc<Mutex<HashMap<String, Waiting>>>);

impl Registry {
    pub(super) fn take(&self, id: &str) -> Option<Waiting> {
        self.0.lock().ok()?.remove(id)
    }
}

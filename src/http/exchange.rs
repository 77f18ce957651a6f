//! What the parts of one HTTP request tell each other while it is served: the server creates one
//! [`Exchange`] per HTTP request and passes it down, through the pipeline and the handler's
//! [`super::Ctx`] to the MCP endpoint, and into each of its tool calls' internal requests, which
//! run through the pipeline again with the same value. Nothing of it outlives the request but
//! the delay holds, which the server keeps until the delay is served.
//!
//! Everything is reached through `&Exchange` (the internal requests of a tool call run while the
//! `/mcp` handler holds it), so each part sits in a cell; no borrow is held across a call. A new
//! value allocates nothing.

use super::delay_holds::Hold;
use super::observation::{Observation, Who};
use super::response::Delivery;
use std::cell::{Cell, RefCell};

/// The per-request state of one HTTP request and the tool calls it carries.
#[derive(Default)]
pub struct Exchange {
    /// The journal hook's ([`super::observe`]) tool call running now: `Some` while it runs, with
    /// the observation of the last REST request it made, if any.
    pub(super) tool_call: RefCell<Option<Option<Observation>>>,
    /// Tool calls journaled so far (the `/mcp` envelope that carried them adds no entry).
    pub(super) tool_entries: Cell<u32>,
    /// Who the `/mcp` endpoint authenticated itself (its route is public to the pipeline), when
    /// a journal observes the traffic.
    pub(super) endpoint_caller: RefCell<Option<Who>>,
    /// The faults injected into the tool calls, for the `/mcp` answer around them.
    tool_faults: RefCell<ToolFaults>,
    /// Holds taken by an injected delay, kept by the server until the delay is served.
    holds: RefCell<Vec<Hold>>,
}

/// What the MCP tool calls inside one HTTP request injected.
#[derive(Default)]
pub(super) struct ToolFaults {
    pub(super) sources: Vec<String>,
    pub(super) delivery: Delivery,
}

impl Exchange {
    /// Records a fault injected into one of the request's tool calls.
    pub(super) fn tool_fault(&self, source: &str, delay_ms: u64, drop: bool) {
        let mut faults = self.tool_faults.borrow_mut();
        faults.sources.push(source.to_string());
        faults.delivery.delay_ms = faults.delivery.delay_ms.max(delay_ms);
        faults.delivery.drop |= drop;
    }

    /// The faults injected into the request's tool calls so far, taken.
    pub(super) fn take_tool_faults(&self) -> ToolFaults {
        std::mem::take(&mut *self.tool_faults.borrow_mut())
    }

    /// Keeps the hold of a delay decided for this request (or one of its tool calls).
    pub(super) fn hold(&self, hold: Hold) {
        self.holds.borrow_mut().push(hold);
    }

    /// The delay holds taken while the request was served: the server keeps them until it has
    /// waited the delay out.
    pub fn into_holds(self) -> Vec<Hold> {
        self.holds.into_inner()
    }
}

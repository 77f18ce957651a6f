//! A tool as served: its spec, route(s), the actions that make it visible, and its definitions.
//! The type every layer of the MCP server shares; it imports no sibling but [`super::spec`].

use super::spec::ToolSpec;
use crate::auth::{authorize, Action, Principal, Target};
use crate::http::router::Route;
use crate::redact;
use serde_json::Value;

/// A tool as served: its definition for `tools/list` and what a call needs.
pub struct Tool {
    pub spec: ToolSpec,
    /// The route the tool calls (reads) or whose change it prepares; `None` for confirm/cancel.
    pub route: Option<Route>,
    /// The GET route a prepare tool reads the target with.
    pub read_route: Option<Route>,
    /// The tool is listed to a principal allowed any of these actions (none: never listed).
    pub actions: Vec<Action>,
    pub input_schema: Value,
    /// The entry of `tools/list` with the full schemas (`X-MCP-Schemas: full`).
    pub definition: Value,
    /// The entry of `tools/list` by default ([`super::compact`]).
    pub compact: Value,
    /// How the tool's answer is redacted: its output type's declaration ([`redact::Shape`]);
    /// undeclared ([`redact::Shape::Any`]: every string scanned) for previews and confirmations,
    /// whose `after` and `differences` hold any type.
    pub shape: redact::Shape,
}

impl Tool {
    pub fn available(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The single permission question: may this principal use the route(s) behind the tool?
    pub fn allowed(&self, p: &Principal) -> bool {
        self.actions
            .iter()
            .any(|a| authorize(p, *a, Target::Service).is_ok())
    }

    /// The scope a caller lacks, for the refusal message.
    pub fn required_scope(&self) -> String {
        let mut scopes: Vec<String> = Vec::new();
        for scope in self.actions.iter().map(|a| a.required_scope()) {
            if !scope.is_empty() && !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes.join("` or `")
    }
}

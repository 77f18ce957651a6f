//! Advice an assistant can follow. The REST problems end with advice for a REST client ("Buy a
//! token pack first."); over MCP that sentence is replaced by one that names a tool this very key
//! may call, or, when it has none, says that the user must do it outside the assistant.

use super::call::{problem_message, Caller};
use super::state::state;
use crate::http::App;
use crate::http::Response;

/// A sentence of REST advice and what an assistant can do instead.
struct Hint {
    /// The sentence as the REST problem detail ends with it.
    rest: &'static str,
    /// The tools that do it, any of which this key must be allowed to call.
    tools: &'static [&'static str],
    /// The advice when the key may call those tools.
    with_tool: &'static str,
    /// The advice when it may not.
    elsewhere: &'static str,
}

const HINTS: &[Hint] = &[
    Hint {
        rest: "Buy a token pack first.",
        tools: &["prepare_token_purchase"],
        with_tool: "To make it possible, buy tokens first: list_token_packs shows the packs and prices, prepare_token_purchase buys one (after the user confirms it); then prepare this change again.",
        elsewhere: "To make it possible, the company needs more tokens: this API key cannot buy them, so the user must buy a token pack outside this assistant (or lower the promotion's activation cost), then ask again.",
    },
    Hint {
        rest: "change `ends_at` first.",
        tools: &["prepare_promotion_change"],
        with_tool: "it can be activated again only after its `ends_at` moves to the future: prepare_promotion_change with a later `ends_at` does that (after the user confirms it); then prepare the activation again.",
        elsewhere: "it can be activated again only after its `ends_at` moves to the future, which this API key cannot do: the user must change the end date outside this assistant.",
    },
    Hint {
        rest: "Fetch it again and retry.",
        tools: &[],
        with_tool: "",
        elsewhere: "Read it again and prepare the change again.",
    },
];

/// Whether this caller may call the tool now.
pub fn can_call(app: &App, caller: &Caller, tool: &str) -> bool {
    let catalog = state(app).catalog(&app.router);
    // The request's toolsets and read-only mode count too: advice and prompts name no tool
    // this request cannot call.
    catalog.get(tool).is_some_and(|t| {
        t.available() && t.allowed(&caller.principal) && caller.view.shows(t, &catalog.tools)
    })
}

/// `message` with each REST advice sentence replaced by advice for this caller.
pub fn rewrite(app: &App, caller: &Caller, message: &str) -> String {
    let mut out = message.to_string();
    for hint in HINTS {
        if !out.contains(hint.rest) {
            continue;
        }
        let usable = !hint.tools.is_empty() && hint.tools.iter().all(|t| can_call(app, caller, t));
        let advice = if usable {
            hint.with_tool
        } else {
            hint.elsewhere
        };
        out = out.replace(hint.rest, advice);
    }
    out
}

/// A REST failure as a message for the assistant, with advice it can follow.
pub fn explain(app: &App, caller: &Caller, resp: &Response) -> String {
    rewrite(app, caller, &problem_message(resp))
}

/// Every REST advice sentence this module knows, for the test that none reaches an assistant.
pub fn rest_sentences() -> impl Iterator<Item = &'static str> {
    HINTS.iter().map(|h| h.rest)
}

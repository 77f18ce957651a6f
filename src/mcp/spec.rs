//! What the tools are: the tool declarations on the routes ([`crate::http::router::Tool`], added
//! with `Route::tool`), plus the two tools that are not one route: `confirm_change` and
//! `cancel_change`, which run whichever change a prepare tool stored.
//!
//! Nothing here is a copy of route data: the operation, path parameters, query parameters and
//! body of a tool are read from the route it is declared on.

use crate::http::router::{Change, Route, Router, Withheld};
use hyper::Method;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One REST GET; the answer is the tool result.
    Read,
    /// Stores a change and returns its preview; executes nothing.
    Prepare,
    Confirm,
    Cancel,
}

#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    /// The operation the tool calls (reads), or the operation of the change it prepares; empty
    /// for confirm and cancel.
    pub operation: &'static str,
    /// The tool argument (and its description) that fills each path parameter, in order.
    pub path_args: &'static [(&'static str, &'static str)],
    /// For a prepare tool: what it changes.
    pub change: Option<Change>,
    /// See [`crate::http::router::Tool::reads`].
    pub reads: Option<&'static str>,
    /// See [`crate::http::router::Tool::withholds`].
    pub withholds: Option<Withheld>,
    /// See [`crate::http::router::Tool::asking`].
    pub ask: Option<&'static str>,
}

impl ToolSpec {
    const fn own(
        name: &'static str,
        title: &'static str,
        kind: Kind,
        description: &'static str,
    ) -> ToolSpec {
        ToolSpec {
            name,
            title,
            description,
            kind,
            operation: "",
            path_args: &[],
            change: None,
            reads: None,
            withholds: None,
            ask: None,
        }
    }

    fn of_route(route: &Route) -> Option<ToolSpec> {
        let t = route.tool?;
        Some(ToolSpec {
            name: t.name,
            title: t.title,
            description: t.description,
            kind: if t.change.is_some() {
                Kind::Prepare
            } else {
                Kind::Read
            },
            operation: route.operation_id,
            path_args: t.path_args,
            change: t.change,
            reads: t.reads,
            withholds: t.withholds,
            ask: t.ask,
        })
    }

    /// The kind of object a prepare tool changes (`ad` for the `ad_id` argument).
    pub fn target_type(&self) -> &'static str {
        let arg = self.path_args.first().map_or("", |(name, _)| *name);
        arg.strip_suffix("_id").unwrap_or(arg)
    }
}

/// The tools that are not one route.
const CONFIRM: ToolSpec = ToolSpec::own(
    "confirm_change",
    "Confirm a prepared change",
    Kind::Confirm,
    "Apply a prepared change ONLY after the user saw its preview and explicitly agreed; never on your own. Runs with the key's permissions as they are now; if the target changed since the preview, nothing is applied.",
);
const CANCEL: ToolSpec = ToolSpec::own(
    "cancel_change",
    "Cancel a prepared change",
    Kind::Cancel,
    "Discard a prepared change (when the user declines, say): nothing is executed, and its confirmation_id stops working.",
);

/// Every tool, in the order `tools/list` returns them: the reads in route-table order, then the
/// prepare tools in route-table order, then confirm and cancel.
pub fn specs(router: &Router) -> Vec<ToolSpec> {
    let declared: Vec<ToolSpec> = router
        .routes()
        .iter()
        .filter_map(ToolSpec::of_route)
        .collect();
    let (mut tools, prepares): (Vec<ToolSpec>, Vec<ToolSpec>) =
        declared.into_iter().partition(|t| t.kind == Kind::Read);
    tools.extend(prepares);
    tools.extend([CONFIRM, CANCEL]);
    tools
}

/// The operations `confirm_change` can execute: those a prepare tool is declared on.
pub fn write_operations(router: &Router) -> Vec<&'static str> {
    router
        .routes()
        .iter()
        .filter(|r| r.tool.is_some_and(|t| t.change.is_some()))
        .map(|r| r.operation_id)
        .collect()
}

/// The GET route a prepare tool reads its target with: the route's path up to one of its path
/// parameters (`/promotions/{id}` for `/promotions/{id}/activate`).
pub fn read_route<'a>(router: &'a Router, write: &Route) -> Option<&'a Route> {
    if let Some(op) = write.tool.and_then(|t| t.reads) {
        return router.by_operation(op);
    }
    // The longest such path with a GET route: `/ads/{id}` for `/ads/{id}/devices/{device_id}`.
    let mut path = write.path;
    while let Some(end) = path.rfind('}') {
        path = &path[..end + 1];
        if let Some(r) = router
            .routes()
            .iter()
            .find(|r| r.method == Method::GET && r.path == path)
        {
            return Some(r);
        }
        path = &path[..path.rfind('{')?];
    }
    None
}

/// Whether preparing this change shows its token cost: the route may refuse it with 402.
pub fn costs_tokens(write: &Route) -> bool {
    write.may_return.contains(&402)
}

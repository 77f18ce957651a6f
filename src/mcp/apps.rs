//! An MCP App (extension `io.modelcontextprotocol/ui`, stable 2026-01-26) for previews: the
//! prepare tools link `_meta.ui.resourceUri` to one `ui://` view that renders the pending change
//! (an ad as the screen would show it, a promotion with its QR code, a purchase with its cost)
//! with Confirm and Cancel buttons. The buttons call `confirm_change` / `cancel_change` through the
//! host (JSON-RPC `tools/call` over `postMessage`), so the host's own approval rules apply and the
//! server sees an ordinary call with the user's credential.
//!
//! Only clients that declare the extension (with the HTML MIME type) see the link; the others get
//! the same tools and text as before. The view loads nothing from anywhere: its CSP declares no
//! domain (deny by default), its script and style are inline, images are `data:` URIs.
//!
//! Below the client's features ([`super::sessions`] reads [`EXTENSION`] and [`MIME_TYPE`] from a
//! client's capabilities): this file imports no sibling but [`super::tool`] and [`super::spec`].

use super::spec::Kind;
use super::tool::Tool;
use serde_json::{json, Value};

pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
pub const PREVIEW_URI: &str = "ui://signage/change-preview";

const PREVIEW_HTML: &str = include_str!("apps/change_preview.html");

/// The view's `_meta.ui`: no external origin of any kind, a border from the host.
fn ui_meta() -> Value {
    json!({"csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
        "prefersBorder": true})
}

/// The `ui://` resources `resources/list` shows.
pub fn listed() -> Vec<Value> {
    vec![
        json!({"uri": PREVIEW_URI, "name": "change-preview", "title": "Change preview",
        "description": "The card a prepare_* tool's preview is shown in, with Confirm and Cancel.",
        "mimeType": MIME_TYPE, "_meta": {"ui": ui_meta()}}),
    ]
}

/// The contents of a `ui://` resource.
pub fn read(uri: &str) -> Option<Value> {
    (uri == PREVIEW_URI).then(|| {
        json!({"uri": PREVIEW_URI, "mimeType": MIME_TYPE, "text": PREVIEW_HTML,
            "_meta": {"ui": ui_meta()}})
    })
}

/// A `tools/list` entry as this client sees it: prepare tools link the view when the client
/// renders MCP Apps (`ui_apps`, of its [`super::sessions::ClientFeatures`]); everything else is
/// unchanged.
pub fn decorate(definition: &Value, tool: &Tool, ui_apps: bool) -> Value {
    let mut d = definition.clone();
    if ui_apps && tool.spec.kind == Kind::Prepare {
        d["_meta"] = json!({"ui": {"resourceUri": PREVIEW_URI, "visibility": ["model", "app"]}});
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_loads_nothing_from_outside() {
        let html = PREVIEW_HTML.to_ascii_lowercase();
        assert!(html.starts_with("<!doctype html>"));
        for outside in ["http://", "https://", "src=\"//", "@import"] {
            assert!(!html.contains(outside), "{outside}");
        }
        assert!(html.contains("confirm_change") && html.contains("cancel_change"));
        let c = read(PREVIEW_URI).unwrap();
        assert_eq!(c["mimeType"], MIME_TYPE);
        assert!(read("ui://signage/other").is_none());
    }
}

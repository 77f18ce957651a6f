//! What one request sees of the catalogue: the toolsets it selects (`X-MCP-Toolsets: devices,ads`),
//! read-only mode (`X-MCP-Readonly: true`) and the schema detail (`X-MCP-Schemas: full`).
//!
//! A toolset is an area of the API (`crate::areas`: its tools are those whose route starts with one
//! of the area's path segments) or `account` (the key, the service, search). `confirm_change` and
//! `cancel_change` come with any selected toolset that has a prepare tool. Read-only mode leaves out
//! every tool that prepares or runs a change. Both only narrow what the key's scopes allow: a
//! request can never see a tool its key may not use.
//!
//! The headers are read on every request (a session does not remember them), so a client
//! configuration fixes them once (`signage mcp-config --toolsets … --readonly`). A name that is
//! not a toolset is refused with the list of names, never ignored: a typo must not silently widen
//! or empty the catalogue.

use super::spec::Kind;
use super::tool::Tool;
use crate::areas::Area;
use hyper::HeaderMap;

pub const TOOLSETS_HEADER: &str = "x-mcp-toolsets";
pub const READONLY_HEADER: &str = "x-mcp-readonly";
pub const SCHEMAS_HEADER: &str = "x-mcp-schemas";

/// The toolset of tools that belong to no area: the key's permissions, the service's health, search.
pub const ACCOUNT: &str = "account";

/// Every toolset name, in catalogue order.
pub fn names() -> Vec<&'static str> {
    std::iter::once(ACCOUNT)
        .chain(Area::ALL.iter().map(|a| a.name()))
        .collect()
}

/// The toolset a tool belongs to; `None` for confirm/cancel, which follow the prepare tools.
pub fn toolset_of(tool: &Tool) -> Option<&'static str> {
    let route = tool.route.as_ref()?;
    let first = route.path.split('/').find(|s| !s.is_empty()).unwrap_or("");
    Some(Area::of_path_segment(first).map_or(ACCOUNT, Area::name))
}

/// One request's view of the catalogue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// `None`: every toolset.
    pub toolsets: Option<Vec<&'static str>>,
    pub readonly: bool,
    /// Serve the full output schemas instead of the compact ones.
    pub full_schemas: bool,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// A boolean header: `true`/`false`/`1`/`0` (any case); absent is false.
fn flag(headers: &HeaderMap, name: &str) -> Result<bool, String> {
    match header(headers, name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if v == "true" || v == "1" => Ok(true),
        Some(v) if v == "false" || v == "0" || v.is_empty() => Ok(false),
        Some(v) => Err(format!(
            "`{name}: {}` is not a boolean: send `true` or `false`.",
            super::protocol::shorten(&v)
        )),
    }
}

impl View {
    /// The view the request's headers ask for, or why they cannot be read.
    pub fn from_headers(headers: &HeaderMap) -> Result<View, String> {
        let toolsets = match header(headers, TOOLSETS_HEADER).map(str::trim) {
            None | Some("") => None,
            Some(list) => Some(parse_toolsets(list)?),
        };
        let full_schemas =
            match header(headers, SCHEMAS_HEADER).map(|v| v.trim().to_ascii_lowercase()) {
                None => false,
                Some(v) if v == "full" => true,
                Some(v) if v == "compact" || v.is_empty() => false,
                Some(v) => {
                    return Err(format!(
                        "`X-MCP-Schemas: {}` is not known: send `compact` (the default) or `full`.",
                        super::protocol::shorten(&v)
                    ))
                }
            };
        Ok(View {
            toolsets: toolsets.filter(|t: &Vec<&str>| !t.contains(&"all")),
            readonly: flag(headers, READONLY_HEADER)?,
            full_schemas,
        })
    }

    fn selects(&self, toolset: &str) -> bool {
        self.toolsets.as_ref().is_none_or(|t| t.contains(&toolset))
    }

    /// Whether this view shows the tool (the key's scopes are asked separately).
    pub fn shows(&self, tool: &Tool, all: &[Tool]) -> bool {
        let writes = matches!(tool.spec.kind, Kind::Prepare | Kind::Confirm | Kind::Cancel);
        if self.readonly && writes {
            return false;
        }
        match toolset_of(tool) {
            Some(set) => self.selects(set),
            // confirm/cancel: with any selected toolset that prepares changes.
            None => all
                .iter()
                .filter(|t| t.spec.kind == Kind::Prepare && t.available())
                .filter_map(toolset_of)
                .any(|set| self.selects(set)),
        }
    }

    /// Why a tool the key may use is not in this view (for the refusal of a call).
    pub fn why_hidden(&self, tool: &Tool) -> String {
        if self.readonly && tool.spec.kind != Kind::Read {
            return format!(
                "{} changes data, and this request is read-only (X-MCP-Readonly: true).",
                tool.spec.name
            );
        }
        let selected = self
            .toolsets
            .as_ref()
            .map(|t| t.join(","))
            .unwrap_or_default();
        format!(
            "{} belongs to the `{}` toolset, which this request did not select (X-MCP-Toolsets: {selected}).",
            tool.spec.name,
            toolset_of(tool).unwrap_or("(a toolset with prepare tools)")
        )
    }

    /// The definition `tools/list` shows for a tool.
    pub fn definition<'t>(&self, tool: &'t Tool) -> &'t serde_json::Value {
        if self.full_schemas {
            &tool.definition
        } else {
            &tool.compact
        }
    }
}

/// `devices, ads` -> the known names, in the order given, without repeats; `all` stands for
/// every toolset.
pub fn parse_toolsets(list: &str) -> Result<Vec<&'static str>, String> {
    let known = names();
    let mut out: Vec<&'static str> = Vec::new();
    let mut unknown = Vec::new();
    for raw in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let lower = raw.to_ascii_lowercase();
        let found = if lower == "all" {
            Some("all")
        } else {
            known.iter().copied().find(|k| *k == lower)
        };
        match found {
            Some(name) if !out.contains(&name) => out.push(name),
            Some(_) => {}
            None => unknown.push(super::protocol::shorten(raw)),
        }
    }
    if !unknown.is_empty() {
        return Err(format!(
            "Unknown toolset {}: the toolsets are {} (or `all`).",
            unknown
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        ));
    }
    if out.is_empty() {
        return Err(format!(
            "X-MCP-Toolsets names no toolset: give one or more of {} (or `all`).",
            known.join(", ")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolset_lists_parse_strictly() {
        assert_eq!(
            parse_toolsets(" Devices, ads,devices ").unwrap(),
            ["devices", "ads"]
        );
        let err = parse_toolsets("devices,screens").unwrap_err();
        assert!(
            err.contains("`screens`") && err.contains("account"),
            "{err}"
        );
        assert!(parse_toolsets(" , ").is_err());
        assert_eq!(parse_toolsets("all").unwrap(), ["all"]);
    }

    #[test]
    fn headers_make_a_view() {
        let mut h = HeaderMap::new();
        assert_eq!(View::from_headers(&h).unwrap(), View::default());
        h.insert(TOOLSETS_HEADER, "ads,all".parse().unwrap());
        h.insert(READONLY_HEADER, "TRUE".parse().unwrap());
        let v = View::from_headers(&h).unwrap();
        assert_eq!(v.toolsets, None);
        assert!(v.readonly);
        h.insert(READONLY_HEADER, "yes".parse().unwrap());
        assert!(View::from_headers(&h).is_err());
        h.insert(READONLY_HEADER, "false".parse().unwrap());
        h.insert(SCHEMAS_HEADER, "verbose".parse().unwrap());
        assert!(View::from_headers(&h).is_err());
    }
}

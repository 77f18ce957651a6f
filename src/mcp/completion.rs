//! `completion/complete`: suggestions for prompt arguments and resource template variables.
//!
//! An id argument (`company_id`, `promotion_id`, a template's `{id}`) is completed with the ids of
//! the objects the key can see, found by name through the REST list (`q`, the same name search as
//! REST, with the caller's credential, so another company's objects never appear): names that
//! start with the typed text first, then ids that start with it, then names that contain it. A
//! month (`YYYY-MM`) is completed from the last twelve months of the sandbox clock.
//!
//! A key that may not list companies (a billing-only key) is offered the companies its credential
//! reaches (`GET /me`), by id. A lookup the rate limit refuses is a JSON-RPC error saying when to
//! retry, never an empty list that would read as "nothing matches".

use super::call::{encode, Caller};
use super::prompts;
use super::protocol::RpcError;
use super::reply::{ok, rpc_err, Out};
use super::resources::{self, Template};
use crate::http::App;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

/// At most this many values per answer (the specification's limit).
const MAX_VALUES: usize = 100;

fn invalid(id: &Value, msg: String, modern: bool) -> Out {
    rpc_err(id, super::protocol::RpcError::invalid_params(msg), modern)
}

pub fn complete(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let p = params.cloned().unwrap_or(Value::Null);
    let r = &p["ref"];
    let (Some(arg), value) = (
        p["argument"]["name"].as_str(),
        p["argument"]["value"].as_str().unwrap_or(""),
    ) else {
        return invalid(
            id,
            "completion/complete needs `params.argument` with `name` and `value`.".into(),
            modern,
        );
    };
    let value = value.trim();
    let candidates = match r["type"].as_str() {
        Some("ref/prompt") => {
            let name = r["name"].as_str().unwrap_or("");
            let Some(prompt) = prompts::visible(app, caller).find(|pr| pr.name == name) else {
                return invalid(
                    id,
                    format!(
                        "Unknown prompt `{}`; prompts/list shows the prompts of this API key.",
                        super::protocol::shorten(name)
                    ),
                    modern,
                );
            };
            if !prompt.arguments.iter().any(|a| a.name == arg) {
                return invalid(
                    id,
                    format!(
                        "Prompt {} has no argument `{}`.",
                        prompt.name,
                        super::protocol::shorten(arg)
                    ),
                    modern,
                );
            }
            if arg == "month" {
                Candidates::done(months(value, caller.now()))
            } else {
                let kind = arg.strip_suffix("_id").unwrap_or(arg);
                match resources::template_named(kind) {
                    Some(t) => match ids(app, caller, t, value) {
                        Ok(c) => c,
                        Err(e) => return rpc_err(id, e, modern),
                    },
                    None => Candidates::done(Vec::new()),
                }
            }
        }
        Some("ref/resource") => {
            let uri = r["uri"].as_str().unwrap_or("");
            let Some(t) = resources::template_of_uri_template(uri) else {
                return invalid(
                    id,
                    format!(
                        "Unknown resource template `{}`; resources/templates/list shows them.",
                        super::protocol::shorten(uri)
                    ),
                    modern,
                );
            };
            if arg != "id" {
                return invalid(
                    id,
                    format!("Template {} has one variable, `id`.", t.uri_template()),
                    modern,
                );
            }
            match ids(app, caller, t, value) {
                Ok(c) => c,
                Err(e) => return rpc_err(id, e, modern),
            }
        }
        _ => {
            return invalid(
                id,
                "`params.ref.type` must be `ref/prompt` or `ref/resource`.".into(),
                modern,
            )
        }
    };
    let total = candidates.values.len();
    let mut values = candidates.values;
    values.truncate(MAX_VALUES);
    ok(
        id,
        json!({"completion": {"values": values, "total": total,
            "hasMore": candidates.more || total > MAX_VALUES}}),
        modern,
    )
}

struct Candidates {
    values: Vec<String>,
    more: bool,
}

impl Candidates {
    fn done(values: Vec<String>) -> Candidates {
        Candidates {
            values,
            more: false,
        }
    }
}

/// The ids of the caller's objects of a template's kind that match the typed text.
fn ids(app: &App, caller: &Caller, t: &Template, typed: &str) -> Result<Candidates, RpcError> {
    let Some(route) = t.list.and_then(|op| app.router.by_operation(op)) else {
        return Ok(Candidates::done(Vec::new()));
    };
    let searchable = route.query.iter().any(|p| p.name == "q");
    let lower = typed.to_lowercase();
    // Text that looks like an id (`dev_…`) is matched against ids, not names.
    let by_name = searchable && !typed.is_empty() && !typed.contains('_');
    let mut query = format!("limit={MAX_VALUES}");
    if by_name {
        query.push_str("&q=");
        encode(typed, &mut query);
    }
    let resp = caller.rest(app, Method::GET, route.path.to_string(), query, None, None);
    if resp.status == StatusCode::FORBIDDEN && route.operation_id == "listCompanies" {
        return reached_companies(app, caller, &lower);
    }
    refused(app, caller, &resp)?;
    let Some(body) = resp.body_json().filter(|_| resp.status.is_success()) else {
        return Ok(Candidates::done(Vec::new()));
    };
    let items = body["data"].as_array().cloned().unwrap_or_default();
    let mut ranked: Vec<(u8, String, String)> = items
        .iter()
        .filter_map(|item| {
            let id = item["id"].as_str()?.to_string();
            let name = item["name"]
                .as_str()
                .or_else(|| item["filename"].as_str())
                .unwrap_or("")
                .to_lowercase();
            let rank = if lower.is_empty() || name.starts_with(&lower) {
                0
            } else if id.to_lowercase().starts_with(&lower) {
                1
            } else if name.contains(&lower) {
                2
            } else {
                return None;
            };
            Some((rank, name, id))
        })
        .collect();
    ranked.sort();
    Ok(Candidates {
        values: ranked.into_iter().map(|(_, _, id)| id).collect(),
        more: body["has_more"] == true,
    })
}

/// The companies a key reaches without the right to list them (`GET /me`'s
/// `visible_company_ids`: a billing-only key's own company), by id.
fn reached_companies(app: &App, caller: &Caller, lower: &str) -> Result<Candidates, RpcError> {
    let Some(route) = app.router.by_operation("getCredential") else {
        return Ok(Candidates::done(Vec::new()));
    };
    let resp = caller.rest(
        app,
        Method::GET,
        route.path.to_string(),
        String::new(),
        None,
        None,
    );
    refused(app, caller, &resp)?;
    let ids = resp
        .body_json()
        .filter(|_| resp.status.is_success())
        .and_then(|me| me["visible_company_ids"].as_array().cloned())
        .unwrap_or_default();
    Ok(Candidates::done(
        ids.iter()
            .filter_map(Value::as_str)
            .filter(|id| id.to_lowercase().starts_with(lower))
            .map(String::from)
            .collect(),
    ))
}

/// A lookup the service refused for a reason other than access (the rate limit, a failure) is an
/// error of the completion, never an empty list; a missing scope means nothing to offer.
fn refused(app: &App, caller: &Caller, resp: &crate::http::Response) -> Result<(), RpcError> {
    if resp.status.is_success()
        || resp.status == StatusCode::FORBIDDEN
        || resp.status == StatusCode::NOT_FOUND
    {
        return Ok(());
    }
    let failure = super::failure::Failure::rest(resp, super::advice::explain(app, caller, resp));
    let mut data = json!({"reason": failure.code, "status": failure.status});
    if let Some(secs) = failure.retry_after {
        data["retry_after"] = json!(secs);
    }
    Err(RpcError::new(super::protocol::SERVER_REFUSED, failure.text()).with_data(data))
}

/// The last twelve months (`YYYY-MM`, newest first) up to the one of `now` that start with the
/// typed text.
fn months(typed: &str, now: i64) -> Vec<String> {
    let now = crate::time::rfc3339(now);
    let (mut year, mut month) = (
        now.get(0..4)
            .and_then(|y| y.parse::<i32>().ok())
            .unwrap_or(2026),
        now.get(5..7)
            .and_then(|m| m.parse::<u32>().ok())
            .unwrap_or(1),
    );
    let mut out = Vec::new();
    for _ in 0..12 {
        let m = format!("{year:04}-{month:02}");
        if m.starts_with(typed) {
            out.push(m);
        }
        if month == 1 {
            year -= 1;
            month = 12;
        } else {
            month -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_count_back_across_a_year() {
        let now = crate::time::wall_now();
        let all = months("", now);
        assert_eq!(all.len(), 12);
        assert!(all.windows(2).all(|w| w[0] > w[1]), "{all:?}");
        let this_year = &all[0][..4];
        assert!(months(this_year, now)
            .iter()
            .all(|m| m.starts_with(this_year)));
        assert!(months("1999", now).is_empty());
    }
}

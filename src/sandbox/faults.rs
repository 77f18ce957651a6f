//! `/_sandbox/faults`: the operator's fault rules ([`crate::http::faults`] applies them).

use crate::auth::Action;
use crate::http::error::FieldError;
use crate::http::faults::{
    faultable, FaultAction, NewRule, Rule, MAX_DELAY_MS, MAX_DETAIL, MAX_PATH, MAX_RETRY_AFTER,
    MAX_RULES, MAX_TIMES, METHODS,
};
use crate::http::router::{Route, Router};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{FaultId, Kind};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/faults", "createSandboxFault", Action::Sandbox, create)
        .describe("Inject a fault (the sandbox operator's, scope `sandbox`): requests that match (operation, method, path pattern, key, REST or MCP) are answered with an error status, delayed, or have their connection dropped, a number of `times` or with a seeded `probability`. Injected answers carry `Signage-Fault`. 409 `fault_limit` past 100 rules.")
            .tag("sandbox")
            .summary("Inject a fault: answer matching requests with an error status, a delay, or a dropped connection.")
            .body("SandboxFaultNew")
            .created("SandboxFault")
            .may_return(&[409])
            .not_idempotent(),
        Route::get("/_sandbox/faults", "listSandboxFaults", Action::Sandbox, list)
        .no_tool("the sandbox operator's control of the instance, not account data")
        .describe("The fault rules in the order they are tried, each with how often it fired and how often it still may. The sandbox operator's (scope `sandbox`).")
            .tag("sandbox")
            .summary("The fault rules, in the order they are tried, with how often each has fired.")
            .ok("SandboxFaultRules"),
        Route::delete("/_sandbox/faults", "clearSandboxFaults", Action::Sandbox, clear)
        .describe("Delete every fault rule. The sandbox operator's (scope `sandbox`).")
            .tag("sandbox")
            .summary("Delete every fault rule.")
            .returns(204, None),
        Route::delete("/_sandbox/faults/{id}", "deleteSandboxFault", Action::Sandbox, delete)
        .describe("Delete one fault rule. The sandbox operator's (scope `sandbox`).")
            .tag("sandbox")
            .summary("Delete one fault rule.")
            .returns(204, None),
    ]
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let new: NewRule = ctx.json()?;
    validate(&new, &ctx.app.router)?;
    let rule = ctx
        .app
        .faults
        .add(new, ctx.clock(), ctx.seeded(), ctx.now())?;
    Ok(Response::created(&rule))
}

/// Checks every field, collecting all problems (422).
fn validate(new: &NewRule, router: &Router) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    let mut bad = |field: &str, code: &str, message: String| {
        errors.push(FieldError::new(field.to_string(), code, message))
    };
    let m = &new.matcher;
    if let Some(op) = &m.operation_id {
        match router.by_operation(op) {
            None => bad(
                "/match/operation_id",
                "unknown_operation",
                format!(
                    "no operation `{}` (see /openapi.json)",
                    op.chars().take(80).collect::<String>()
                ),
            ),
            Some(r) if !faultable(r.operation()) => bad(
                "/match/operation_id",
                "never_faulted",
                "public routes and /_sandbox/* are never faulted".into(),
            ),
            Some(_) => {}
        }
    }
    if let Some(method) = &m.method {
        if !METHODS.contains(&method.as_str()) {
            bad(
                "/match/method",
                "invalid",
                "one of GET, POST, PUT, PATCH, DELETE".into(),
            );
        }
    }
    if let Some(path) = &m.path {
        let ok_chars = path
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#');
        if !path.starts_with('/') || path.len() > MAX_PATH || !ok_chars {
            bad("/match/path", "invalid", "a path such as `/devices/*` (at most 200 characters; `*` matches one segment, a final `**` any rest)".into());
        } else if path.starts_with("/_sandbox") {
            bad(
                "/match/path",
                "never_faulted",
                "/_sandbox/* is never faulted".into(),
            );
        }
    }
    if let Some(key) = &m.key_id {
        if !crate::ids::is_valid(crate::ids::Kind::ApiKey, key) {
            bad("/match/key_id", "invalid", "an API key id (`key_…`)".into());
        }
    }
    match &new.action {
        FaultAction::Status {
            status,
            detail,
            retry_after,
        } => {
            if !(400..=599).contains(status) {
                bad(
                    "/action/status",
                    "out_of_range",
                    "an error status, 400 to 599".into(),
                );
            }
            if detail
                .as_ref()
                .is_some_and(|d| d.is_empty() || d.chars().count() > MAX_DETAIL)
            {
                bad(
                    "/action/detail",
                    "invalid_length",
                    "1 to 500 characters".into(),
                );
            }
            if retry_after.is_some_and(|s| s > MAX_RETRY_AFTER) {
                bad(
                    "/action/retry_after",
                    "out_of_range",
                    "at most 86400 seconds".into(),
                );
            }
        }
        FaultAction::Delay { delay_ms } => {
            if !(1..=MAX_DELAY_MS).contains(delay_ms) {
                bad(
                    "/action/delay_ms",
                    "out_of_range",
                    format!("1 to {MAX_DELAY_MS} milliseconds"),
                );
            }
        }
        FaultAction::Drop => {}
    }
    if new.times.is_some_and(|t| !(1..=MAX_TIMES).contains(&t)) {
        bad("/times", "out_of_range", format!("1 to {MAX_TIMES}"));
    }
    if new.probability.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
        bad(
            "/probability",
            "out_of_range",
            "greater than 0, at most 1".into(),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// Every fault rule of the sandbox, in the order they are tried.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxFaultRules")]
struct RuleList {
    #[schemars(extend("const" = "sandbox_fault_list"))]
    object: &'static str,
    #[schemars(length(max = MAX_RULES), transform = crate::jsonschema::items::<Rule>)]
    data: Vec<Rule>,
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    Ok(Response::ok(&RuleList {
        object: "sandbox_fault_list",
        data: ctx.app.faults.list(),
    }))
}

fn clear(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    ctx.app.faults.clear();
    Ok(Response::no_content())
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: FaultId = ctx.path()?;
    if ctx.app.faults.remove(&id) {
        Ok(Response::no_content())
    } else {
        Err(ApiError::not_found(Kind::Fault.what(), &id))
    }
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_body::<NewRule>(),
        named_response::<Rule>(),
        named_response::<RuleList>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_rule_limit_is_the_enforced_one() {
        let schema = crate::jsonschema::body::<NewRule>();
        let text = schema["description"].as_str().unwrap_or("");
        assert!(
            text.starts_with(&format!("At most {MAX_RULES} rules")),
            "{text}"
        );
    }
}

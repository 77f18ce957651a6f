//! Fault injection: the sandbox operator's rules (`/_sandbox/faults`) and the per-request
//! `Prefer: code=…` / `Prefer: delay=…` header, as Prism does.
//!
//! The pipeline asks [`decide`] once per authenticated request, after the scope check and its own
//! checks of the query string and the `Idempotency-Key` header, before the body's validation and
//! the handler. So a fault never changes what an unauthenticated
//! caller or a caller without the scope sees (401, 403), public routes (health, the OpenAPI
//! document, login, the `/mcp` endpoint itself) and `/_sandbox/*` are never faulted, and an MCP
//! tool call is faulted as the internal REST request it becomes (`via: mcp`).
//!
//! Actions: `status` answers a problem instead of running the request; `drop` closes the
//! connection without an answer, the request not run; `delay` runs the request and holds its
//! answer back. The pipeline never waits: it marks the response ([`super::response::Delivery`]) and the server
//! sleeps or drops in async code. An MCP tool call's delay or drop is carried to the `/mcp` HTTP
//! response that contains it (collected in the request's [`Exchange`], [`finish_outer`]).
//!
//! Rules live in memory, per app (no table): they are test scaffolding, so a restart forgets them.
//! A sandbox snapshot saves them (with their counts and draws, [`Faults::save`]) and a restore puts
//! them back as they were, so a test restored from a snapshot meets the same faults.
//!
//! A rule with a `probability` draws from its own stream: in a seeded sandbox, derived from (seed,
//! the rule's id), and advanced only by the requests the rule matches, so an unrelated request
//! never changes which request a rule hits.

use super::error::ApiError;
use super::exchange::Exchange;
use super::response::Response;
use crate::auth::{Action, Principal};
use crate::ids::Kind;
use crate::validate::NullableOneOf;
use hyper::{HeaderMap, Method, StatusCode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The most rules one sandbox holds (exhausted ones included, until deleted).
pub const MAX_RULES: usize = 100;
/// The longest delay a rule or `Prefer: delay=` may ask for.
pub const MAX_DELAY_MS: u64 = 30_000;
/// The most times a rule may be set to fire.
pub const MAX_TIMES: u64 = 1_000_000;
/// The header every injected answer carries: the rule's id, or `prefer`.
pub const HEADER: &str = "signage-fault";
/// The methods a rule may match.
pub const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];
/// The longest path pattern a rule may match.
pub const MAX_PATH: usize = 200;
/// The longest `detail` of an injected problem.
pub const MAX_DETAIL: usize = 500;
/// The longest `retry_after` an injected status may send (a day).
pub const MAX_RETRY_AFTER: u32 = 86_400;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    // A REST request from a client.
    Rest,
    // The internal REST request of an MCP tool call.
    Mcp,
    #[default]
    Any,
}

/// Which requests the rule applies to; every criterion given must hold, none given matches every
/// faultable request.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    /// An operationId from /openapi.json (not a public or /_sandbox/ one).
    #[serde(default)]
    pub operation_id: Option<String>,
    #[serde(default)]
    #[schemars(transform = NullableOneOf(METHODS))]
    pub method: Option<String>,
    /// A path pattern: `*` matches one segment, a final `**` any rest (`/devices/*`).
    #[serde(default)]
    #[schemars(length(max = MAX_PATH))]
    pub path: Option<String>,
    /// Only requests made with this API key (directly or through MCP).
    #[serde(default)]
    #[schemars(regex(pattern = Kind::ApiKey.pattern()))]
    pub key_id: Option<String>,
    /// `mcp`: the internal REST request of an MCP tool call (an `isError` result).
    #[serde(default)]
    pub via: Via,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum FaultAction {
    /// Answer this status with a problem+json body (`code: injected_fault`) instead of running the
    /// request.
    Status {
        #[schemars(range(min = 400, max = 599))]
        status: u16,
        #[serde(default)]
        #[schemars(length(min = 1, max = MAX_DETAIL))]
        detail: Option<String>,
        /// Seconds, sent as Retry-After.
        #[serde(default)]
        #[schemars(range(min = 0, max = MAX_RETRY_AFTER))]
        retry_after: Option<u32>,
    },
    /// Run the request, then hold its answer back.
    Delay {
        #[schemars(range(min = 1, max = MAX_DELAY_MS))]
        delay_ms: u64,
    },
    /// Close the connection without an answer; the request is not run.
    Drop,
}

/// At most 100 rules per sandbox; they are kept in memory, tried in creation order, and the first
/// that fires applies.
// The number is [`MAX_RULES`] (a test holds them together).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxFaultNew")]
pub struct NewRule {
    #[serde(rename = "match", default)]
    #[schemars(transform = crate::jsonschema::no_default)]
    pub matcher: Matcher,
    pub action: FaultAction,
    /// Fire this many times, then stay listed, exhausted. Unset: no limit.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_TIMES))]
    pub times: Option<u64>,
    /// Greater than 0. Fire on this share of matching requests, drawn from the sandbox generator
    /// (reproducible with a seed). Unset: every one.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub probability: Option<f64>,
}

/// A fault rule: which requests it matches, what it does to them, and how often it fired.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "SandboxFault")]
pub struct Rule {
    #[schemars(extend("const" = "sandbox_fault"))]
    pub object: &'static str,
    #[schemars(transform = Kind::Fault)]
    pub id: String,
    #[serde(rename = "match")]
    pub matcher: Matcher,
    pub action: FaultAction,
    /// Fire this many times, then stay listed, exhausted. Unset: no limit.
    #[schemars(range(min = 1, max = MAX_TIMES))]
    pub times: Option<u64>,
    /// Greater than 0. Fire on this share of matching requests, drawn from the sandbox generator
    /// (reproducible with a seed). Unset: every one.
    #[schemars(range(min = 0, max = 1))]
    pub probability: Option<f64>,
    /// Firings left; null: no limit.
    pub remaining: Option<u64>,
    pub fired: u64,
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// The position of the rule's own stream of draws (for `probability`).
    #[serde(skip)]
    pub draws: u64,
}

/// A rule as a snapshot keeps it: everything, its stream's position included.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SavedRule {
    pub id: String,
    pub matcher: Matcher,
    pub action: FaultAction,
    pub times: Option<u64>,
    pub probability: Option<f64>,
    pub remaining: Option<u64>,
    pub fired: u64,
    pub created_at: String,
    pub draws: u64,
}

/// What a fault rule matches of a request's route: its parts, not the route itself, which holds
/// its handler and so names the handler's context (this file stays below the route table).
#[derive(Clone, Copy)]
pub struct Operation<'a> {
    pub method: &'a Method,
    /// The route's pattern (`/devices/{id}`).
    pub pattern: &'static str,
    pub operation_id: &'static str,
    pub action: Action,
}

/// True for the routes a fault may hit: authenticated, not the operator's own controls.
pub fn faultable(op: Operation<'_>) -> bool {
    op.action != Action::Public
        && op.action != Action::Sandbox
        && !op.pattern.starts_with("/_sandbox/")
}

/// The rules of one app.
pub struct Faults {
    rules: Mutex<Vec<Rule>>,
    /// How many rules there are: the pipeline's lock-free "nothing to do".
    count: AtomicUsize,
    /// The requests held back by a delay right now, bounded per account.
    pub holds: super::delay_holds::DelayHolds,
}

impl Faults {
    /// No rules yet; at most `max_delayed_per_account` delayed requests per account (and half
    /// of `max_connections` in all).
    pub fn new(max_delayed_per_account: usize, max_connections: usize) -> Faults {
        Faults {
            rules: Mutex::default(),
            count: AtomicUsize::new(0),
            holds: super::delay_holds::DelayHolds::new(max_delayed_per_account, max_connections),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        // A poisoned lock only means a panic elsewhere; the rules are plain data.
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a validated rule, or 409 `fault_limit` when [`MAX_RULES`] are held.
    /// Adds a rule made at `now`, its id drawn on `clock` (and `seeded`, in a seeded sandbox).
    pub fn add(
        &self,
        new: NewRule,
        clock: &crate::time::Clock,
        seeded: Option<&crate::random::Seeded>,
        now: i64,
    ) -> Result<Rule, ApiError> {
        let mut rules = self.lock();
        if rules.len() >= MAX_RULES {
            return Err(ApiError::ConflictCode {
                code: "fault_limit",
                detail: format!(
                    "This sandbox already holds {MAX_RULES} fault rules; delete some first."
                ),
            });
        }
        let id = crate::ids::new_id(clock, seeded, crate::ids::Kind::Fault);
        // Seeded: the rule's stream starts from (seed, id); else from the per-thread generator.
        let draws = match seeded {
            Some(g) => g.key(&format!("fault:{id}")),
            None => crate::random::nonsecret::next_u64(),
        };
        let rule = Rule {
            object: "sandbox_fault",
            id,
            draws,
            matcher: new.matcher,
            action: new.action,
            times: new.times,
            probability: new.probability,
            remaining: new.times,
            fired: 0,
            created_at: crate::time::rfc3339(now),
        };
        rules.push(rule.clone());
        self.count.store(rules.len(), Ordering::Relaxed);
        Ok(rule)
    }

    pub fn list(&self) -> Vec<Rule> {
        self.lock().clone()
    }

    pub fn remove(&self, id: &str) -> bool {
        let mut rules = self.lock();
        let before = rules.len();
        rules.retain(|r| r.id != id);
        self.count.store(rules.len(), Ordering::Relaxed);
        rules.len() < before
    }

    /// Every rule as it stands, counts and draws included (a snapshot's copy).
    pub fn save(&self) -> Vec<SavedRule> {
        self.lock()
            .iter()
            .map(|r| SavedRule {
                id: r.id.clone(),
                matcher: r.matcher.clone(),
                action: r.action.clone(),
                times: r.times,
                probability: r.probability,
                remaining: r.remaining,
                fired: r.fired,
                created_at: r.created_at.clone(),
                draws: r.draws,
            })
            .collect()
    }

    /// Replaces every rule with a snapshot's copy.
    pub fn restore(&self, saved: Vec<SavedRule>) {
        let mut rules = self.lock();
        *rules = saved
            .into_iter()
            .take(MAX_RULES)
            .map(|r| Rule {
                object: "sandbox_fault",
                id: r.id,
                matcher: r.matcher,
                action: r.action,
                times: r.times,
                probability: r.probability,
                remaining: r.remaining,
                fired: r.fired,
                created_at: r.created_at,
                draws: r.draws,
            })
            .collect();
        self.count.store(rules.len(), Ordering::Relaxed);
    }

    pub fn clear(&self) {
        let mut rules = self.lock();
        rules.clear();
        self.count.store(0, Ordering::Relaxed);
    }

    /// The first rule, in creation order, that matches and fires (its count and draw spent).
    /// A request `refused` says will be refused anyway (asked once, when a rule first matches) is
    /// shown to none: it draws nothing and spends nothing.
    fn fire(
        &self,
        op: Operation<'_>,
        path: &str,
        principal: &Principal,
        via: Via,
        refused: impl FnOnce() -> bool,
    ) -> Option<(String, FaultAction)> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut refused = Some(refused);
        let mut rules = self.lock();
        for rule in rules.iter_mut() {
            if rule.remaining == Some(0) || !matches(&rule.matcher, op, path, principal, via) {
                continue;
            }
            if refused.take().is_some_and(|refused| refused()) {
                return None;
            }
            if let Some(p) = rule.probability {
                // 53 random bits as a number in [0, 1), from the rule's own stream.
                let u = (crate::random::step(&mut rule.draws) >> 11) as f64 / (1u64 << 53) as f64;
                if u >= p {
                    continue;
                }
            }
            rule.fired += 1;
            if let Some(left) = rule.remaining.as_mut() {
                *left -= 1;
            }
            return Some((rule.id.clone(), rule.action.clone()));
        }
        None
    }
}

fn matches(m: &Matcher, op: Operation<'_>, path: &str, principal: &Principal, via: Via) -> bool {
    (m.via == Via::Any || m.via == via)
        && m.operation_id
            .as_deref()
            .is_none_or(|id| id == op.operation_id)
        && m.method
            .as_deref()
            .is_none_or(|method| method == op.method.as_str())
        && m.key_id
            .as_deref()
            .is_none_or(|k| k == principal.actor_id())
        && m.path
            .as_deref()
            .is_none_or(|pattern| path_matches(pattern, path))
}

/// `*` matches one whole segment; a final `**` matches any rest, even nothing.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let mut want = pattern.trim_end_matches('/').split('/');
    let mut have = path.trim_end_matches('/').split('/');
    loop {
        match (want.next(), have.next()) {
            (Some("**"), _) => return want.next().is_none(),
            (None, None) => return true,
            (Some(w), Some(h)) if w == "*" && !h.is_empty() || w == h => {}
            _ => return false,
        }
    }
}

/// What a fault does to one request.
#[derive(Debug)]
pub struct Injected {
    /// The rule id, or `prefer`.
    pub source: String,
    pub status: Option<(u16, Option<String>, Option<u32>)>,
    pub delay_ms: u64,
    pub drop: bool,
    /// The `Preference-Applied` value, for a `Prefer` fault.
    pub applied: Option<String>,
}

impl Injected {
    /// The answer that replaces the request, for `status` and `drop`; `None`: run it.
    /// A drop's answer (a 503) is never sent: it is what the audit log and an MCP tool call see.
    pub fn answer(&self, request_id: &str) -> Option<Response> {
        let dropped = (
            503,
            Some(format!(
                "The connection was dropped by sandbox fault rule {}.",
                self.source
            )),
            None,
        );
        let (status, detail, retry_after) = match &self.status {
            _ if self.drop => &dropped,
            Some(fault) => fault,
            None => return None,
        };
        let code = StatusCode::from_u16(*status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let detail = detail
            .clone()
            .unwrap_or_else(|| match self.source.as_str() {
                "prefer" => "Injected by the request's `Prefer: code=` header.".to_string(),
                rule => format!("Injected by sandbox fault rule {rule}."),
            });
        let body = serde_json::json!({
            "type": "/problems/injected-fault",
            "title": code.canonical_reason().unwrap_or("Injected fault"),
            "status": code.as_u16(),
            "detail": detail,
            "request_id": request_id,
            "code": "injected_fault",
            "fault": self.source,
        });
        let mut resp = Response::problem(code, &body);
        if let Some(secs) = retry_after {
            resp.set_header("retry-after", &secs.to_string());
        }
        Some(resp)
    }

    /// Marks `resp` as injected: the header, and how the server delivers it. An MCP tool call's
    /// marks are also kept in `exchange` for the `/mcp` response around it.
    pub fn mark(&self, mut resp: Response, via: Via, exchange: &Exchange) -> Response {
        resp.set_header(HEADER, &self.source);
        if let Some(applied) = &self.applied {
            resp.set_header("preference-applied", applied);
        }
        resp.delivery.delay_ms = resp.delivery.delay_ms.max(self.delay_ms);
        resp.delivery.drop |= self.drop;
        if via == Via::Mcp {
            exchange.tool_fault(&self.source, self.delay_ms, self.drop);
        }
        resp
    }
}

/// The fault for this request, if any: its own `Prefer: code=`/`delay=` (when
/// `sandbox.allow_prefer_faults`), else the first rule that fires. A request that asks for its
/// own fault is never shown to the rules: it draws nothing from their streams and spends none of
/// their `times`, so a seeded run faults the same requests whatever `Prefer` requests it also
/// sends. Nor is a request whose body will be refused (`body_refused`: another key's 422 must
/// not move which of the next requests a rule hits). `Err` is a 422 for a malformed
/// `Prefer: code=`/`delay=` (nothing drawn either).
#[allow(clippy::too_many_arguments)]
pub fn decide(
    faults: &Faults,
    allow_prefer: bool,
    op: Operation<'_>,
    path: &str,
    headers: &HeaderMap,
    principal: &Principal,
    via: Via,
    body_refused: impl FnOnce() -> bool,
) -> Result<Option<Injected>, ApiError> {
    if !faultable(op) {
        return Ok(None);
    }
    if allow_prefer && headers.contains_key("prefer") {
        if let Some(own) = prefer(headers)? {
            return Ok(Some(own));
        }
    }
    let Some((id, action)) = faults.fire(op, path, principal, via, body_refused) else {
        return Ok(None);
    };
    let mut injected = Injected {
        source: id,
        status: None,
        delay_ms: 0,
        drop: false,
        applied: None,
    };
    match action {
        FaultAction::Status {
            status,
            detail,
            retry_after,
        } => injected.status = Some((status, detail, retry_after)),
        FaultAction::Delay { delay_ms } => injected.delay_ms = delay_ms,
        FaultAction::Drop => injected.drop = true,
    }
    Ok(Some(injected))
}

/// Whether a JSON body will be refused whatever its handler does: a body the route requires is
/// missing, is not a JSON object, or lacks a member its schema (`schema`) requires. Asked only
/// when a rule matches; what it cannot tell (a value out of range) the handler refuses later.
pub fn json_body_refused(schema: Option<&serde_json::Value>, optional: bool, body: &[u8]) -> bool {
    if body.is_empty() {
        return !optional;
    }
    let Ok(serde_json::Value::Object(members)) = serde_json::from_slice(body) else {
        return true;
    };
    schema
        .and_then(|s| s["required"].as_array())
        .is_some_and(|required| {
            required
                .iter()
                .filter_map(|m| m.as_str())
                .any(|m| !members.contains_key(m))
        })
}

/// `Prefer: code=503` and `Prefer: delay=250` (RFC 7240; other preferences are ignored).
fn prefer(headers: &HeaderMap) -> Result<Option<Injected>, ApiError> {
    let (mut code, mut delay) = (None, None);
    // A constant: the name is not parsed again for every request.
    const PREFER: hyper::header::HeaderName = hyper::header::HeaderName::from_static("prefer");
    for value in headers.get_all(PREFER) {
        let Ok(value) = value.to_str() else { continue };
        for pref in value.split(',') {
            let token = pref.split(';').next().unwrap_or("").trim();
            let Some((name, v)) = token.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match name.trim().to_ascii_lowercase().as_str() {
                "code" => match v.parse::<u16>() {
                    Ok(c) if (400..=599).contains(&c) => code = Some(c),
                    _ => {
                        return Err(ApiError::invalid(
                            "Prefer",
                            "invalid_preference",
                            "`code=` takes an error status, 400 to 599",
                        ))
                    }
                },
                "delay" => match v.parse::<u64>() {
                    Ok(ms) if ms <= MAX_DELAY_MS => delay = Some(ms),
                    _ => {
                        return Err(ApiError::invalid(
                            "Prefer",
                            "invalid_preference",
                            format!("`delay=` takes 0 to {MAX_DELAY_MS} milliseconds"),
                        ))
                    }
                },
                _ => {}
            }
        }
    }
    if code.is_none() && delay.is_none() {
        return Ok(None);
    }
    let applied: Vec<String> = code
        .map(|c| format!("code={c}"))
        .into_iter()
        .chain(delay.map(|d| format!("delay={d}")))
        .collect();
    Ok(Some(Injected {
        source: "prefer".into(),
        status: code.map(|c| (c, None, None)),
        delay_ms: delay.unwrap_or(0),
        drop: false,
        applied: Some(applied.join(", ")),
    }))
}

/// Carries the faults of the tool calls made while serving `resp` onto it: `Signage-Fault`
/// lists their sources, and their delay or drop applies to the whole HTTP response.
pub fn finish_outer(exchange: &Exchange, resp: &mut Response) {
    let outer = exchange.take_tool_faults();
    if outer.sources.is_empty() {
        return;
    }
    resp.set_header(HEADER, &outer.sources.join(", "));
    resp.delivery.delay_ms = resp.delivery.delay_ms.max(outer.delivery.delay_ms);
    resp.delivery.drop |= outer.delivery.drop;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_patterns_match_whole_segments() {
        assert!(path_matches("/devices/*", "/devices/dev_1"));
        assert!(!path_matches("/devices/*", "/devices"));
        assert!(!path_matches("/devices/*", "/devices/dev_1/ads"));
        assert!(path_matches("/devices/**", "/devices/dev_1/ads"));
        assert!(path_matches("/devices/**", "/devices"));
        assert!(path_matches("/devices", "/devices/"));
        assert!(!path_matches("/devices", "/devicesx"));
        assert!(path_matches("/*/dev_1", "/devices/dev_1"));
    }

    #[test]
    fn prefer_reads_code_and_delay_and_ignores_the_rest() {
        let mut h = HeaderMap::new();
        h.insert(
            "prefer",
            "return=minimal, code=503; x=1, delay=\"20\""
                .parse()
                .unwrap(),
        );
        let i = prefer(&h).unwrap().unwrap();
        assert_eq!(i.status.map(|s| s.0), Some(503));
        assert_eq!(i.delay_ms, 20);
        assert_eq!(i.applied.as_deref(), Some("code=503, delay=20"));
        h.insert("prefer", "return=minimal".parse().unwrap());
        assert!(prefer(&h).unwrap().is_none());
        h.insert("prefer", "code=200".parse().unwrap());
        assert!(prefer(&h).is_err());
        h.insert("prefer", "delay=30001".parse().unwrap());
        assert!(prefer(&h).is_err());
    }
}

//! One request through the service: route -> authenticate -> rate limit -> authorize (scope) ->
//! injected faults -> query check -> idempotency -> handler -> audit. REST requests arrive here
//! from the hyper server; MCP tool calls arrive here as internal requests carrying the MCP
//! caller's own headers.

use super::ctx::Ctx;
use super::error::{ApiError, FieldError};
use super::exchange::Exchange;
use super::faults::{self, Via};
use super::idempotency::{self, Begin};
use super::observe;
use super::response::Response;
use super::router::{Exec, Match};
use super::state::App;
use crate::audit;
use crate::auth::authenticate::authenticate;
use crate::auth::{authorize, Action, Principal, Target};
use crate::db::{Origin, Scoped, WriteIntent};
use hyper::Method;

/// What the pipeline takes, named here by its callers (the server, MCP tool calls).
pub use super::request::{Credential, Request};

/// The route's execution mode and pattern, for the server to choose a thread and to log, and the
/// match itself, which [`execute_matched`] takes so that an inline request is routed once.
pub fn route_info<'a>(
    app: &'a App,
    method: &Method,
    path: &str,
) -> (Exec, &'static str, Match<'a>) {
    let found = app.router.find(method, path);
    match &found {
        Match::Found(route, _) => (route.exec, route.path, found),
        _ => (Exec::Inline, "-", found),
    }
}

/// Serves one HTTP request; `exchange` is its own (the server creates one for each).
pub fn execute(app: &App, req: &Request, exchange: &Exchange) -> Response {
    execute_matched(app, req, app.router.find(&req.method, &req.path), exchange)
}

/// [`execute`] with the router's answer for `req` already in hand.
pub fn execute_matched(
    app: &App,
    req: &Request,
    found: Match<'_>,
    exchange: &Exchange,
) -> Response {
    run_pipeline(app, req, found, None, exchange)
}

/// [`execute`] for an internal request (an MCP tool call) whose credential headers were
/// authenticated as `principal` by the very HTTP request it is part of: the credential is not
/// looked up a second time. Every new HTTP request still authenticates, so a revocation takes
/// effect on the next one, exactly as for REST. `prepaid`: the tool call already spent this
/// request's rate-limit token (the first request of every call is paid for when the call arrives).
/// `exchange` is that HTTP request's.
pub fn execute_as(
    app: &App,
    req: &Request,
    principal: &Principal,
    prepaid: bool,
    exchange: &Exchange,
    db: Scoped<'_>,
) -> Response {
    run_pipeline(
        app,
        req,
        app.router.find(&req.method, &req.path),
        Some(Inner {
            principal,
            prepaid,
            db,
        }),
        exchange,
    )
}

/// An internal request of an MCP tool call: who made the call, whether its token is spent, and
/// the database as the HTTP request carrying it sees it (its read scope).
#[derive(Clone, Copy)]
struct Inner<'a> {
    principal: &'a Principal,
    prepaid: bool,
    db: Scoped<'a>,
}

/// What the journal's observer is told besides the request and its answer.
#[derive(Default)]
struct Seen<'a> {
    route: Option<&'a super::router::Route>,
    principal: Option<Principal>,
    /// Whose refused credential the request proved it holds (a revoked key with its secret...).
    owner: Option<crate::auth::authenticate::Owner>,
}

fn run_pipeline(
    app: &App,
    req: &Request,
    found: Match<'_>,
    authenticated: Option<Inner<'_>>,
    exchange: &Exchange,
) -> Response {
    let started = std::time::Instant::now();
    let via = if authenticated.is_some() {
        Via::Mcp
    } else {
        Via::Rest
    };
    let mut seen = Seen::default();
    let resp = serve(app, req, found, authenticated, &mut seen, exchange);
    observe::request(
        app,
        req,
        seen.route,
        seen.principal.as_ref(),
        seen.owner.as_ref(),
        &resp,
        started,
        via,
        exchange,
    );
    resp
}

fn serve<'m>(
    app: &App,
    req: &Request,
    found: Match<'m>,
    inner: Option<Inner<'_>>,
    seen: &mut Seen<'m>,
    exchange: &Exchange,
) -> Response {
    let authenticated = inner.map(|i| i.principal);
    let prepaid = inner.is_some_and(|i| i.prepaid);
    let outer = inner.map(|i| i.db);
    let (route, params) = match found {
        Match::Found(route, params) => {
            seen.route = Some(route);
            (route, params)
        }
        Match::MethodNotAllowed(allow) => {
            return ApiError::MethodNotAllowed { allow }.into_response(&req.request_id)
        }
        Match::NotFound => {
            return ApiError::NotFound(format!("There is no resource at `{}`.", shorten(&req.path)))
                .into_response(&req.request_id)
        }
    };

    // Every read of the handler is one read transaction, to its last row (an MCP message's tool
    // calls included): one state of the database, one shared lock. A write ends it and the reads
    // after it see the write (`Db::read_scope`). The credential was checked before the body was
    // read, in its own read. A tool call's request reads in the scope of the HTTP request that
    // carries it.
    let serve = |db: Scoped<'_>| {
        serve_route(
            app,
            req,
            route,
            params,
            authenticated,
            prepaid,
            seen,
            exchange,
            db,
        )
    };
    match outer {
        Some(db) => serve(db),
        None => app.db.read_scope(serve),
    }
}

#[allow(clippy::too_many_arguments)]
fn serve_route<'m>(
    app: &App,
    req: &Request,
    route: &'m super::router::Route,
    params: Vec<(&'static str, String)>,
    authenticated: Option<&Principal>,
    prepaid: bool,
    seen: &mut Seen<'m>,
    exchange: &Exchange,
    db: Scoped<'_>,
) -> Response {
    let principal = if route.action == Action::Public {
        None
    } else if let Some(p) = authenticated {
        Some(p.clone())
    } else if let Credential::Verified(v) = &req.credential {
        v.record_use(db);
        Some(v.principal.clone())
    } else {
        match authenticate(db, &app.jwt, &app.principals, &req.headers) {
            Ok(_) if matches!(req.credential, Credential::Refused) => {
                return ApiError::Unavailable(
                    "The credential was refused when the request arrived, so its body was not read; send the request again.".into(),
                )
                .into_response(&req.request_id)
                .with_header("connection", "close")
            }
            Ok(p) => Some(p),
            Err(err) => {
                let err = ApiError::from(err);
                let outcome = match &err {
                    ApiError::Unauthenticated(reason) => {
                        seen.owner = crate::auth::authenticate::proven_owner(
                            db,
                            &app.jwt,
                            &req.headers,
                            *reason,
                        );
                        reason.code()
                    }
                    other => other.slug(),
                };
                let resp = err.into_response(&req.request_id);
                audit_unauthenticated(db, req, route.path, resp.status.as_u16(), outcome);
                return resp;
            }
        }
    };

    // A player's session acts for its one screen: the player's operations on that screen only.
    if let Some(p) = &principal {
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .map(|(_, v)| v.as_str());
        if let Err(denial) = crate::auth::authorize::screen_may(p, route.operation_id, id) {
            seen.principal = principal.clone();
            return ApiError::denied(denial, "device", id.unwrap_or_default())
                .into_response(&req.request_id);
        }
    }

    // One token per authenticated request (REST, or an MCP tool call arriving as one); a throttled
    // request is not audited, so a flood of them writes nothing. The operator's own controls are
    // exempt: a harness polling `/_sandbox/*` with a `sandbox` key is never throttled (its other
    // requests still are).
    let operator_control =
        |p: &Principal| route.path.starts_with("/_sandbox/") && p.scopes.allows(Action::Sandbox);
    let quota = principal
        .as_ref()
        .filter(|p| !operator_control(p) && !prepaid)
        .and_then(|p| app.rate_limiter.take(p.actor_id()));
    if let Some(q) = quota.filter(|q| q.retry_after_secs.is_some()) {
        let mut resp = ApiError::RateLimited {
            retry_after_secs: q.retry_after_secs.unwrap_or(1),
        }
        .into_response(&req.request_id);
        app.rate_limiter.set_headers(&q, &mut resp);
        seen.principal = principal;
        return resp;
    }

    // The principal moves into the handler's context and back (no copy per request). An MCP tool
    // call arrives already authenticated by its MCP request: the events it records say `mcp`. Its
    // request says whether it is a preview (a dry run) and which balance a confirmation expects.
    let intent = WriteIntent {
        origin: Origin {
            actor: principal.as_ref().map(|p| p.actor_id().to_string()),
            via: if authenticated.is_some() {
                "mcp"
            } else {
                "rest"
            },
        },
        dry_run: req.dry_run,
        later_ms: req.later_ms,
        expected_balance: req.expected_balance.clone(),
    };
    let mut principal = principal;
    // An MCP tool call arrives authenticated by the HTTP request it is part of.
    let via = if authenticated.is_some() {
        Via::Mcp
    } else {
        Via::Rest
    };
    let mut resp = run(
        app,
        req,
        route,
        params,
        &mut principal,
        via,
        exchange,
        &intent,
        db,
    );
    if via == Via::Rest {
        faults::finish_outer(exchange, &mut resp);
    }

    // Writes, and every authentication failure, including those of routes that authenticate
    // for themselves (the MCP endpoint).
    if route.audited || resp.status == hyper::StatusCode::UNAUTHORIZED {
        let outcome = if resp.status.is_success() {
            "ok".to_string()
        } else {
            resp.body_json()
                .and_then(|b| {
                    if let Some(code) = b["code"].as_str() {
                        return Some(code.to_string());
                    }
                    b["type"]
                        .as_str()
                        .map(|t| t.rsplit('/').next().unwrap_or("").to_string())
                })
                .unwrap_or_else(|| "error".into())
        };
        match &principal {
            Some(p) => audit::record(
                db,
                &intent,
                &audit::Entry {
                    request_id: &req.request_id,
                    actor: Some(p.actor_id()),
                    client_id: p.client_id(),
                    account_id: Some(&p.account_id),
                    company_id: p.company_scope.as_deref(),
                    method: req.method.as_str(),
                    route: route.path,
                    status: resp.status.as_u16(),
                    outcome: &outcome,
                },
            ),
            None => audit_unauthenticated(db, req, route.path, resp.status.as_u16(), &outcome),
        }
    }
    if let Some(q) = quota {
        app.rate_limiter.set_headers(&q, &mut resp);
    }
    seen.principal = principal;
    resp
}

/// A request without a principal: the entry is the presented key's account's if that key exists,
/// else the operator's.
fn audit_unauthenticated(db: Scoped<'_>, req: &Request, route: &str, status: u16, outcome: &str) {
    let presented = crate::auth::authenticate::presented_key_id(&req.headers);
    // No one to name: the entry records no event, and keeps nothing of a previewed request.
    let intent = WriteIntent {
        dry_run: req.dry_run,
        later_ms: req.later_ms,
        ..WriteIntent::by(Origin {
            actor: None,
            via: "rest",
        })
    };
    audit::record_unauthenticated(
        db,
        &intent,
        presented.as_deref(),
        &req.request_id,
        req.method.as_str(),
        route,
        status,
        outcome,
    );
}

// Each argument is a different part of the request's state, passed rather than read from the
// thread; bundling them would only move the list.
#[allow(clippy::too_many_arguments)]
fn run(
    app: &App,
    req: &Request,
    route: &super::router::Route,
    params: Vec<(&'static str, String)>,
    owned: &mut Option<Principal>,
    via: Via,
    exchange: &Exchange,
    intent: &WriteIntent,
    db: Scoped<'_>,
) -> Response {
    let rid = &req.request_id;
    let principal = owned.as_ref();
    if let Some(p) = principal {
        if let Err(denial) = authorize(p, route.action, Target::Service) {
            return ApiError::denied(denial, "", "").into_response(rid);
        }
    }
    // The pipeline's own checks come before any fault: a request refused here never ran and
    // draws nothing from a fault rule's stream.
    let query = match super::query::parse(&req.query) {
        Ok(q) => q,
        Err(e) => return e.into_response(rid),
    };
    let unknown: Vec<FieldError> = query
        .iter()
        .filter(|(k, _)| !route.query.iter().any(|p| p.name == k))
        .map(|(k, _)| {
            FieldError::new(
                k.clone(),
                "unknown_parameter",
                "This query parameter is not accepted here.",
            )
        })
        .collect();
    if !unknown.is_empty() {
        return ApiError::Validation(unknown).into_response(rid);
    }
    // Every documented length bound holds for every route, whether or not its handler reads the
    // parameter's length: a filter longer than its `maxLength` is refused, not silently matched.
    let out_of_bounds: Vec<FieldError> = query
        .iter()
        .filter_map(|(k, v)| {
            let schema = &route.query.iter().find(|p| p.name == k)?.schema.0;
            let chars = v.chars().count() as u64;
            let max = schema["maxLength"].as_u64().filter(|max| chars > *max);
            let min = schema["minLength"].as_u64().filter(|min| chars < *min);
            let message = match (max, min) {
                (Some(max), _) => format!("At most {max} characters."),
                (_, Some(min)) => format!("At least {min} characters."),
                _ => return None,
            };
            Some(FieldError::new(k.clone(), "invalid_length", message))
        })
        .collect();
    if !out_of_bounds.is_empty() {
        return ApiError::Validation(out_of_bounds).into_response(rid);
    }
    if let Some(missing) = route
        .query
        .iter()
        .find(|p| p.required && !query.iter().any(|(k, _)| k == p.name))
    {
        return ApiError::invalid(
            missing.name,
            "required",
            "This query parameter is required.",
        )
        .into_response(rid);
    }

    // A constant: the name is not parsed again for every request; and only asked for where it
    // can count.
    const IDEMPOTENCY_KEY: hyper::header::HeaderName =
        hyper::header::HeaderName::from_static("idempotency-key");
    let asked = principal.is_some() && route.idempotent;
    let idempotency_header = match asked.then(|| req.headers.get(IDEMPOTENCY_KEY)).flatten() {
        Some(value) => match value.to_str() {
            Ok(k) => {
                if let Err(e) = idempotency::validate_key(k) {
                    return e.into_response(rid);
                }
                Some(k)
            }
            Err(_) => {
                return ApiError::invalid("Idempotency-Key", "invalid_header", "Not visible ASCII.")
                    .into_response(rid)
            }
        },
        _ => None,
    };
    let mut injected = None;
    if let Some(p) = principal {
        // Faults come after the scope check, so they never change a 401 or a 403.
        let allow_prefer = app.settings.sandbox_allow_prefer_faults;
        match faults::decide(
            &app.faults,
            allow_prefer,
            route.operation(),
            &req.path,
            &req.headers,
            p,
            via,
            || match route.request {
                super::router::RequestBody::Json(schema) => faults::json_body_refused(
                    app.router.schema(schema),
                    route.body_optional,
                    &req.body,
                ),
                _ => false,
            },
        ) {
            Err(e) => return e.into_response(rid),
            Ok(Some(fault)) => match fault.answer(rid) {
                Some(answer) => return fault.mark(answer, via, exchange),
                None => {
                    // A delay holds a connection: bounded per account, checked before the
                    // request runs, so a refusal changes nothing.
                    if fault.delay_ms > 0 {
                        match app.faults.holds.acquire(&p.account_id, fault.delay_ms) {
                            Ok(hold) => exchange.hold(hold),
                            Err(refused) => {
                                return ApiError::TooManyDelayed {
                                    limit: refused.limit,
                                    sandbox_wide: refused.sandbox_wide,
                                    retry_after_secs: refused.retry_after_secs,
                                }
                                .into_response(rid)
                            }
                        }
                    }
                    injected = Some(fault)
                }
            },
            Ok(None) => {}
        }
    }
    let idempotency_key = match (principal, idempotency_header) {
        (Some(p), Some(key)) => {
            // A spooled body is fingerprinted by its digest (taken as it was written).
            let spooled = req.spool.as_ref().map(|s| s.sha256_hex());
            let body = spooled.as_deref().map_or(&req.body[..], str::as_bytes);
            match idempotency::begin(
                db,
                intent,
                p.actor_id(),
                key,
                req.method.as_str(),
                &req.path,
                &req.query,
                body,
            ) {
                Ok(Begin::Replay(resp)) => return resp,
                Ok(Begin::Proceed) => Some((p.actor_id().to_string(), key.to_string())),
                Err(e) => return e.into_response(rid),
            }
        }
        _ => None,
    };

    // A route that authenticates itself (`/mcp`) gets what the server verified, once.
    let credential = match &req.credential {
        Credential::Verified(v) if route.authenticates_itself => {
            v.record_use(db);
            Some(v.principal.clone())
        }
        _ => None,
    };
    let mut ctx = Ctx {
        app,
        route,
        request_id: rid,
        headers: &req.headers,
        params,
        query,
        body: req.body.clone(),
        principal: owned.take(),
        credential,
        spool: req.spool.clone(),
        peer: req.peer,
        direct: via == Via::Rest,
        exchange,
        intent,
        db,
    };
    let resp = match off_worker(route.exec, via, || (route.handler)(&mut ctx)) {
        Ok(resp) => resp,
        Err(err) => {
            if let ApiError::Internal(detail) = &err {
                tracing::error!(request_id = %rid, route = route.path, error = %detail, "internal error");
            }
            err.into_response(rid)
        }
    };
    *owned = ctx.principal.take();
    if let Some((actor, key)) = idempotency_key {
        idempotency::finish(db, intent, &actor, &key, &resp);
    }
    // A delay: the request ran (and its idempotency record is kept unmarked); its answer waits.
    match injected {
        Some(fault) => fault.mark(resp, via, exchange),
        None => resp,
    }
}

/// Runs a handler where it may take long without stalling other requests. A REST request of a
/// blocking route already runs on a blocking thread (the server spawns it there); an MCP tool call
/// runs inside its `/mcp` request on an async worker, so a blocking route's handler (a report, a
/// clock advance) hands that worker's other tasks over first ([`tokio::task::block_in_place`]).
/// Under a single-threaded runtime (a test's) there is no other worker to hand them to.
fn off_worker<T>(exec: Exec, via: Via, handler: impl FnOnce() -> T) -> T {
    let on_worker = via == Via::Mcp
        && exec == Exec::Blocking
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(handler)
    } else {
        handler()
    }
}

fn shorten(path: &str) -> String {
    if path.len() <= 80 {
        path.to_string()
    } else {
        format!("{}…", path.chars().take(80).collect::<String>())
    }
}

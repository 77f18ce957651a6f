//! The route table: method + path pattern -> handler, with what each route needs and documents.
//!
//! REST and `/mcp` share this one table. It also carries the named JSON Schemas its routes refer
//! to ([`Router::with_schemas`]) and the MCP tools declared on its routes ([`Route::tool`]), so the
//! OpenAPI document and the MCP catalogue are both built from the table alone.

mod param;
mod route;
mod tool;

pub use param::{
    cursor_param, one_of_param, param, Param, ParamSchema, QueryParam, Schema, LIMIT_PARAM,
    NUMERIC_CURSOR_SCHEMA,
};
pub use route::{Exec, HandlerFn, RequestBody, Route};
pub use tool::{Change, Tool, Withheld};

use hyper::Method;
use serde_json::Value;
use std::collections::HashMap;

pub enum Match<'a> {
    Found(&'a Route, Vec<(&'static str, String)>),
    MethodNotAllowed(Vec<Method>),
    NotFound,
}

pub struct Router {
    routes: Vec<Route>,
    /// The routes a path can match, by its segment count and first segment, sorted for a binary
    /// search (a few string comparisons; hashing the key cost more than that): the indices (in
    /// table order) of the routes of that length whose first segment is that literal or a
    /// parameter. A path with another first segment can match only [`Router::open_first`]'s.
    by_head: Vec<((usize, &'static str), Vec<usize>)>,
    /// By segment count, the routes whose first segment is a parameter.
    open_first: HashMap<usize, Vec<usize>>,
    /// The named JSON Schemas (`#/components/schemas/<name>`) the routes refer to, in order.
    schemas: Vec<(&'static str, Value)>,
    by_name: HashMap<&'static str, usize>,
}

impl Router {
    pub fn new(routes: Vec<Route>) -> Router {
        let mut by_head: HashMap<(usize, &'static str), Vec<usize>> = HashMap::new();
        let mut open_first: HashMap<usize, Vec<usize>> = HashMap::new();
        for route in &routes {
            if let Some(head) = route.first_literal() {
                by_head.entry((route.segment_count(), head)).or_default();
            }
        }
        for (i, route) in routes.iter().enumerate() {
            let n = route.segment_count();
            match route.first_literal() {
                Some(head) => by_head.entry((n, head)).or_default().push(i),
                None => {
                    open_first.entry(n).or_default().push(i);
                    for ((len, _), list) in by_head.iter_mut() {
                        if *len == n {
                            list.push(i);
                        }
                    }
                }
            }
        }
        let mut by_head: Vec<_> = by_head.into_iter().collect();
        by_head.sort_unstable_by_key(|(head, _)| *head);
        Router {
            routes,
            by_head,
            open_first,
            schemas: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    /// Registers the named schemas the routes refer to. Panics (at start-up) on a schema our
    /// checker refuses ([`crate::jsonschema::check_schema`]) or a name given twice.
    pub fn with_schemas(mut self, schemas: Vec<(&'static str, Value)>) -> Router {
        for (name, schema) in schemas {
            if let Err(e) = crate::jsonschema::check_schema(&schema, name) {
                panic!("route table: schema {e}");
            }
            if self.by_name.insert(name, self.schemas.len()).is_some() {
                panic!("route table: schema `{name}` is registered twice");
            }
            self.schemas.push((name, schema));
        }
        self
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The named schemas, in registration order.
    pub fn schemas(&self) -> &[(&'static str, Value)] {
        &self.schemas
    }

    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name).map(|&i| &self.schemas[i].1)
    }

    pub fn by_operation(&self, operation_id: &str) -> Option<&Route> {
        self.routes.iter().find(|r| r.operation_id == operation_id)
    }

    pub fn find(&self, method: &Method, path: &str) -> Match<'_> {
        let parts: Vec<&str> = path
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let mut allow = Vec::new();
        // The fewest path parameters of a route matched so far: a literal route
        // (`/devices/health`, declared before `/devices/{id}`) owns its path for every method.
        let mut fewest: Option<usize> = None;
        let head = (parts.len(), parts.first().copied().unwrap_or(""));
        let candidates = self
            .by_head
            .binary_search_by(|(h, _)| h.cmp(&head))
            .ok()
            .map(|at| &self.by_head[at].1)
            .or_else(|| self.open_first.get(&parts.len()))
            .map_or(&[][..], Vec::as_slice);
        for route in candidates.iter().map(|&i| &self.routes[i]) {
            if let Some(params) = route.matches(&parts) {
                if fewest.is_some_and(|n| params.len() > n) {
                    continue;
                }
                fewest = Some(params.len());
                if route.method == *method {
                    return Match::Found(route, params);
                }
                if !allow.contains(&route.method) {
                    allow.push(route.method.clone());
                }
            }
        }
        if allow.is_empty() {
            Match::NotFound
        } else {
            Match::MethodNotAllowed(allow)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Action;
    use crate::http::{ApiError, Ctx, Response};

    fn h(_: &mut Ctx<'_>) -> Result<Response, ApiError> {
        Ok(Response::no_content())
    }

    /// Every route, in table order: what `find` did before it had an index.
    fn find_by_scan<'a>(r: &'a Router, method: &Method, path: &str) -> Option<(&'a str, usize)> {
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let mut fewest: Option<usize> = None;
        for route in &r.routes {
            if let Some(params) = route.matches(&parts) {
                if fewest.is_some_and(|n| params.len() > n) {
                    continue;
                }
                fewest = Some(params.len());
                if route.method == *method {
                    return Some((route.operation_id, params.len()));
                }
            }
        }
        None
    }

    #[test]
    fn the_index_finds_what_a_scan_of_the_table_finds() {
        let r = Router::new(vec![
            Route::get("/", "root", Action::Public, h),
            Route::get("/devices", "a", Action::Public, h),
            Route::get("/{tenant}/devices", "open", Action::Public, h),
            Route::get("/devices/health", "lit", Action::Public, h),
            Route::get("/devices/{id}", "b", Action::Public, h),
            Route::get("/{tenant}/{id}", "open2", Action::Public, h),
            Route::post("/ads/{id}", "c", Action::Public, h),
            Route::get("/{a}", "any", Action::Public, h),
        ]);
        for path in [
            "/",
            "/devices",
            "/devices/",
            "/x/devices",
            "/devices/health",
            "/devices/dev_1",
            "/ads/ad_1",
            "/ads",
            "/zzz",
            "/zzz/yyy",
            "/a/b/c",
            "//devices//x",
            "/devices/%20",
        ] {
            for method in [Method::GET, Method::POST] {
                let found = match r.find(&method, path) {
                    Match::Found(route, params) => Some((route.operation_id, params.len())),
                    _ => None,
                };
                assert_eq!(found, find_by_scan(&r, &method, path), "{method} {path}");
            }
        }
    }

    #[test]
    fn matching() {
        let r = Router::new(vec![
            Route::get("/devices", "a", Action::Public, h),
            Route::get("/devices/{id}", "b", Action::Public, h),
            Route::delete("/devices/{id}", "c", Action::Public, h),
        ]);
        match r.find(&Method::GET, "/devices/dev_1") {
            Match::Found(route, params) => {
                assert_eq!(route.operation_id, "b");
                assert_eq!(params, vec![("id", "dev_1".to_string())]);
            }
            _ => panic!("no match"),
        }
        assert!(
            matches!(r.find(&Method::PUT, "/devices/x"), Match::MethodNotAllowed(a) if a.len() == 2)
        );
        assert!(matches!(r.find(&Method::GET, "/nope"), Match::NotFound));
        // A literal route declared first owns its path: other methods are 405 with its Allow,
        // not the methods of `/things/{id}`.
        let r = Router::new(vec![
            Route::get("/things/summary", "s", Action::Public, h),
            Route::get("/things/{id}", "b", Action::Public, h),
            Route::delete("/things/{id}", "c", Action::Public, h),
        ]);
        assert!(
            matches!(r.find(&Method::DELETE, "/things/summary"), Match::MethodNotAllowed(a) if a == [Method::GET])
        );
        assert!(
            matches!(r.find(&Method::DELETE, "/things/t_1"), Match::Found(route, _) if route.operation_id == "c")
        );
        assert!(matches!(
            r.find(&Method::GET, "/devices/x/y"),
            Match::NotFound
        ));
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn a_schema_name_is_registered_once() {
        let s = || ("Thing", serde_json::json!({"type": "object"}));
        let _ = Router::new(Vec::new()).with_schemas(vec![s(), s()]);
    }
}

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

/// The most segments a route's path may have (`Router::new` refuses a table with more), so a
/// request path's segments fit on the stack.
const MAX_SEGMENTS: usize = 8;

/// What [`Router::search`] answers for one literal path, for any method: the route found for each
/// method that finds one, and the methods a 405 lists for any other (none: 404).
struct Literal {
    path: String,
    found: Vec<(Method, usize)>,
    allow: Vec<Method>,
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
    /// By length, the paths of the routes made of literal segments only, with what [`Router::find`]
    /// answers for each, worked out once: a request for one of these paths, written as the route
    /// writes it, is answered by a comparison of strings of its length.
    literal_by_len: Vec<Vec<Literal>>,
    /// The named JSON Schemas (`#/components/schemas/<name>`) the routes refer to, in order.
    schemas: Vec<(&'static str, Value)>,
    by_name: HashMap<&'static str, usize>,
}

impl Router {
    /// Indexes the table. Panics (at start-up) on a route of more than [`MAX_SEGMENTS`] segments.
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
            assert!(
                n <= MAX_SEGMENTS,
                "route table: `{}` has more than {MAX_SEGMENTS} segments",
                route.path
            );
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
        let mut router = Router {
            routes,
            by_head,
            open_first,
            literal_by_len: Vec::new(),
            schemas: Vec::new(),
            by_name: HashMap::new(),
        };
        router.literal_by_len = router.literal_paths();
        router
    }

    /// [`Router::literal_by_len`]: each literal path's answers, from the search itself, so the
    /// shortcut answers exactly what the search would (a parameter route declared before a literal
    /// one still wins its method). A path where some method finds a route with parameters is left
    /// to the search.
    fn literal_paths(&self) -> Vec<Vec<Literal>> {
        let mut methods: Vec<Method> = Vec::new();
        for route in &self.routes {
            if !methods.contains(&route.method) {
                methods.push(route.method.clone());
            }
        }
        let mut by_len: Vec<Vec<Literal>> = Vec::new();
        for route in self.routes.iter().filter(|r| r.is_literal()) {
            let path = route.path.to_string();
            if by_len
                .get(path.len())
                .is_some_and(|l| l.iter().any(|l| l.path == path))
            {
                continue;
            }
            let mut literal = Literal {
                path,
                found: Vec::new(),
                allow: Vec::new(),
            };
            let mut kept = true;
            for method in &methods {
                match self.search(method, &literal.path) {
                    Match::Found(found, params) if params.is_empty() => {
                        let at = self.routes.iter().position(|r| std::ptr::eq(r, found));
                        literal.found.extend(at.map(|at| (method.clone(), at)));
                    }
                    Match::Found(..) => kept = false,
                    Match::MethodNotAllowed(allow) => literal.allow = allow,
                    Match::NotFound => {}
                }
            }
            // A method no route has is refused with every method of the path's routes.
            if literal.allow.is_empty() && !literal.found.is_empty() {
                match Method::from_bytes(b"NO-ROUTE-HAS-THIS") {
                    Ok(none) => match self.search(&none, &literal.path) {
                        Match::MethodNotAllowed(allow) => literal.allow = allow,
                        _ => kept = false,
                    },
                    Err(_) => kept = false,
                }
            }
            if kept {
                let len = literal.path.len();
                if by_len.len() <= len {
                    by_len.resize_with(len + 1, Vec::new);
                }
                by_len[len].push(literal);
            }
        }
        by_len
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
        let literal = self
            .literal_by_len
            .get(path.len())
            .and_then(|same_length| same_length.iter().find(|l| l.path == path));
        if let Some(literal) = literal {
            return match literal.found.iter().find(|(m, _)| m == method) {
                Some(&(_, at)) => Match::Found(&self.routes[at], Vec::new()),
                None if literal.allow.is_empty() => Match::NotFound,
                None => Match::MethodNotAllowed(literal.allow.clone()),
            };
        }
        self.search(method, path)
    }

    /// The route of `method` whose pattern matches `path`, or why there is none: the first in
    /// table order among those with the fewest parameters ([`Router::find`]'s rule).
    fn search(&self, method: &Method, path: &str) -> Match<'_> {
        // The segments on the stack: no route has more than `MAX_SEGMENTS`, so a path with more
        // matches none (and no allocation is made for a path of any length).
        let mut parts = arrayvec::ArrayVec::<&str, MAX_SEGMENTS>::new();
        for part in path.split('/').filter(|s| !s.is_empty()) {
            if parts.try_push(part).is_err() {
                return Match::NotFound;
            }
        }
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
            // A parameter route before a literal one of the same method wins it.
            Route::get("/{tenant}/settings", "param_first", Action::Public, h),
            Route::get("/acme/settings", "literal_after", Action::Public, h),
            Route::delete("/acme/settings", "literal_delete", Action::Public, h),
            Route::post("/devices", "create", Action::Public, h),
        ]);
        for path in [
            "/",
            "/acme/settings",
            "/acme/settings/",
            "/other/settings",
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
            for method in [Method::GET, Method::POST, Method::DELETE, Method::PUT] {
                let found = match r.find(&method, path) {
                    Match::Found(route, params) => Some((route.operation_id, params.len())),
                    _ => None,
                };
                assert_eq!(found, find_by_scan(&r, &method, path), "{method} {path}");
                // A path that is not found for this method lists the methods it has, exactly as
                // the search does (literal paths are answered from the index).
                let allow = |m: Match<'_>| match m {
                    Match::MethodNotAllowed(allow) => Some(allow),
                    _ => None,
                };
                assert_eq!(
                    allow(r.find(&method, path)),
                    allow(r.search(&method, path)),
                    "{method} {path}"
                );
            }
        }
    }

    /// The index keeps literal paths whose every answer has no parameters, and leaves the others
    /// (a parameter route declared first wins one of their methods) to the search.
    #[test]
    fn literal_paths_are_indexed_unless_a_parameter_route_wins_them() {
        let r = Router::new(vec![
            Route::get("/health", "health", Action::Public, h),
            Route::get("/{tenant}/settings", "param_first", Action::Public, h),
            Route::get("/acme/settings", "literal_after", Action::Public, h),
            Route::post("/devices", "create", Action::Public, h),
            Route::get("/devices", "list", Action::Public, h),
        ]);
        let indexed = |path: &str| {
            r.literal_by_len
                .iter()
                .flatten()
                .find(|l| l.path == path)
                .map(|l| (l.found.len(), l.allow.clone()))
        };
        assert_eq!(indexed("/health"), Some((1, vec![Method::GET])));
        assert_eq!(
            indexed("/devices"),
            Some((2, vec![Method::POST, Method::GET]))
        );
        assert_eq!(indexed("/acme/settings"), None);
        assert!(matches!(
            r.find(&Method::GET, "/acme/settings"),
            Match::Found(route, params) if route.operation_id == "param_first" && params.len() == 1
        ));
        assert!(matches!(
            r.find(&Method::DELETE, "/health"),
            Match::MethodNotAllowed(allow) if allow == [Method::GET]
        ));
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
        let s = || {
            (
                "Thing",
                crate::jsonschema::response::<serde_json::Map<String, serde_json::Value>>(),
            )
        };
        let _ = Router::new(Vec::new()).with_schemas(vec![s(), s()]);
    }
}

//! The API reference, generated from the route table: `GET /openapi.json` (OpenAPI 3.1) and
//! `/openapi.yaml`, the human-readable page `/docs`, and one page per problem type
//! (`/problems/{slug}`, the `type` of every error).

mod components;
mod descriptions;
mod docs;
mod document;
pub mod examples;
pub mod problems;
mod webhooks;
mod yaml;

pub use components::tag_list;
pub use document::{document, documented};

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::routes::payloads::Catalogue;
use hyper::StatusCode;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/openapi.json", "getOpenApi", Action::Public, get)
            .no_tool("the REST API's own description, not sandbox data")
            .tag("service")
            .summary("This OpenAPI 3.1 document.")
            .describe("The machine-readable reference of every REST operation, generated from the server's own route table, so it always matches what this server answers. Feed it to a client generator; `/openapi.yaml` is the same document as YAML and `/docs` renders it.")
            .ok("OpenApiDocument"),
        Route::get("/openapi.yaml", "getOpenApiYaml", Action::Public, get_yaml)
            .no_tool("the OpenAPI document again, as YAML")
            .summary("The same document as YAML.")
            .hidden(),
        Route::get("/docs", "getDocsPage", Action::Public, docs::page)
            .no_tool("the human-readable reference page (HTML)")
            .summary("The human-readable reference, rendered from `/openapi.json`, with \"try it\".")
            .hidden(),
        Route::get("/docs/{file}", "getDocsAsset", Action::Public, docs::asset_file)
            .no_tool("the script and style of the reference page")
            .summary("The page's script and style (`app.js`, `app.css`).")
            .hidden(),
        Route::get("/problems/{slug}", "getProblemType", Action::Public, problem)
            .no_tool("an HTML page describing one problem type")
            .summary("A short page per problem `type` (the same text as the document's catalogue).")
            .hidden(),
    ]
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let catalogue = Catalogue::of(ctx.app)?;
    Ok(Response::ok(&document(&ctx.app.router, catalogue)))
}

fn get_yaml(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let catalogue = Catalogue::of(ctx.app)?;
    let text = yaml::to_yaml(&document(&ctx.app.router, catalogue));
    Ok(Response::new(StatusCode::OK, "application/yaml", text))
}

/// A short page per problem type: its status, title and the same text as the document's.
fn problem(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let slug = ctx.param("slug");
    let Some(t) = problems::by_slug(slug) else {
        return Err(ApiError::NotFound(
            "No problem type of this name; see /docs for the list.".into(),
        ));
    };
    Ok(docs::problem_page(t))
}

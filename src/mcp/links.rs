//! Images and files by reference: a tool result names them with `resource_link` content blocks
//! (`signage://qr-codes/{id}/image`, `signage://media/{id}/content`) that the client reads with
//! `resources/read` when it wants the bytes, instead of carrying them inline.
//!
//! The REST answer of `GET /promotions/{id}/qr-codes` holds each code's SVG (about 15 KB each);
//! the tool result leaves it out, and its full output schema says so.

use super::call::Content;
use super::fence::one_line;
use super::tool::Tool;
use serde_json::{json, Value};

/// The operation whose items carry an inline image, and the member that holds it.
const INLINE_IMAGES: &[(&str, &str)] = &[("listPromotionQrCodes", "image_svg")];

/// Operations whose items are media files.
const MEDIA: &[&str] = &["listMedia", "getMedia"];

/// Protocol versions that know `resource_link` content (2025-06-18 on).
fn knows_links(version: &str) -> bool {
    version != "2025-03-26"
}

fn operation(tool: &Tool) -> &'static str {
    tool.route.as_ref().map_or("", |r| r.operation_id)
}

/// The items of a list page, or the object itself.
fn items(v: &mut Value) -> Vec<&mut Value> {
    if v["object"] == "list" {
        match v.get_mut("data").and_then(Value::as_array_mut) {
            Some(data) => data.iter_mut().collect(),
            None => Vec::new(),
        }
    } else {
        vec![v]
    }
}

/// The result without its inline images, and the links to add after the text block.
pub fn extract(tool: &Tool, content: Content, version: &str) -> (Content, Vec<Value>) {
    let op = operation(tool);
    let inline = INLINE_IMAGES
        .iter()
        .find(|(o, _)| *o == op)
        .map(|(_, m)| *m);
    let media = MEDIA.contains(&op);
    if inline.is_none() && !media {
        return (content, Vec::new());
    }
    let mut value = match content {
        Content::Value(v) => v,
        Content::Json(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(_) => return (Content::Json(bytes), Vec::new()),
        },
    };
    let mut links = Vec::new();
    for item in items(&mut value) {
        let id = item["id"].as_str().unwrap_or("").to_string();
        if let Some(member) = inline {
            if let Some(o) = item.as_object_mut() {
                o.remove(member);
            }
            // Tenant text outside the fenced data: redacted, on one line.
            let label = item["label"].as_str().filter(|l| !l.is_empty());
            let encodes = item["short_url"].as_str().unwrap_or("its short link");
            links.push(json!({"type": "resource_link",
                "uri": format!("signage://qr-codes/{id}/image"),
                "name": format!("qr-{id}.svg"),
                "title": format!("QR code {}", one_line(label.unwrap_or(&id))),
                "description": format!("The QR code image (SVG); it encodes {}.", one_line(encodes)),
                "mimeType": "image/svg+xml"}));
        }
        if media {
            let mut link = json!({"type": "resource_link",
                "uri": format!("signage://media/{id}/content"),
                "name": one_line(item["filename"].as_str().unwrap_or(&id)),
                "title": format!("Media file {id}")});
            if let Some(t) = item["content_type"].as_str() {
                link["mimeType"] = json!(t);
            }
            if let Some(n) = item["size_bytes"].as_u64() {
                link["size"] = json!(n);
            }
            links.push(link);
        }
    }
    if !knows_links(version) {
        links.clear();
    }
    (Content::Value(value), links)
}

/// The full output schema of a tool whose items lose an inline image: without that member.
pub fn output_schema(operation: &str, mut schema: Value) -> Value {
    let Some(member) = INLINE_IMAGES
        .iter()
        .find(|(o, _)| *o == operation)
        .map(|(_, m)| *m)
    else {
        return schema;
    };
    let item = if schema["properties"]["object"]["const"] == "list" {
        &mut schema["properties"]["data"]["items"]
    } else {
        &mut schema
    };
    if let Some(props) = item.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove(member);
    }
    if let Some(req) = item.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| r != member);
    }
    schema
}

/// Appends content blocks after the first one of a framed `tools/call` reply.
pub fn append(body: String, links: &[Value]) -> String {
    if links.is_empty() {
        return body;
    }
    let Ok(mut v) = serde_json::from_str::<Value>(&body) else {
        return body;
    };
    match v["result"]["content"].as_array_mut() {
        Some(content) => content.extend(links.iter().cloned()),
        None => return body,
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A QR code as the list answers it: its id and its inline image.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct QrCode {
        id: String,
        image_svg: String,
    }

    #[test]
    fn the_inline_image_leaves_the_schema() {
        let item = crate::jsonschema::response::<QrCode>();
        let s = crate::http::response::list_schema(item);
        let out = output_schema("listPromotionQrCodes", s.clone());
        assert_eq!(
            out["properties"]["data"]["items"]["required"],
            json!(["id"])
        );
        assert!(out["properties"]["data"]["items"]["properties"]
            .get("image_svg")
            .is_none());
        assert_eq!(output_schema("listAds", s.clone()), s);
    }

    #[test]
    fn links_follow_the_first_block() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "{}"}]}}).to_string();
        let out: Value =
            serde_json::from_str(&append(body, &[json!({"type": "resource_link"})])).unwrap();
        assert_eq!(out["result"]["content"][1]["type"], "resource_link");
    }
}

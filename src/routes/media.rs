//! Media: uploaded images and videos that ads show.
//!
//! Uploads are raw bodies (not multipart): the declared `Content-Type` must be one of the allowed
//! types and the bytes must start like that type, so a file can never be served back under a type
//! it is not. Media is immutable; its ETag is the SHA-256 of its bytes.

use super::crud::{self, Time};
use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Change, Param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, MediaId};
use crate::routes::download;
use crate::routes::upload::Sent;
use crate::validate::OneOf;
use bytes::Bytes;
use hyper::{HeaderMap, StatusCode};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

const READ: Action = Action::Use(Area::Media, Level::Read);
const WRITE: Action = Action::Use(Area::Media, Level::Write);

pub const CONTENT_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
    "video/mp4",
];
pub const MAX_UPLOAD_BYTES: usize = 5 * 1024 * 1024;
/// The most a file given inline to the MCP tool `prepare_media_upload` may hold: it travels in a
/// JSON-RPC message, base64-encoded, and is kept with the pending change until it is confirmed.
pub const MCP_UPLOAD_MAX_BYTES: usize = 1024 * 1024;
const CACHE_CONTROL: &str = "private, max-age=60";
/// SVG can carry script; served from the API origin it must never run or load anything.
const SVG_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";
/// How many of the ads that block a delete are named in the 409.
const NAMED_BLOCKERS: i64 = 10;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/media", "listMedia", READ, list)
            .tool(Tool::read(
                "list_media",
                "List media",
                &[],
                "List media items: the images and videos ads show.",
            ))
            .tag("media")
            .summary("List media items (metadata only), newest first.")
            .describe("The media items (images, videos) of the visible companies, newest first: metadata only; fetch the bytes from each item's `download_url`.")
            .paged_by(Kind::Media)
            .query(&[
                param(
                    "company_id",
                    Kind::Company.schema(),
                    "Only media of this company.",
                ),
                one_of_param(
                    "content_type",
                    OneOf(CONTENT_TYPES),
                    "Only media of this type.",
                ),
            ])
            .ok("MediaList"),
        Route::post("/media", "uploadMedia", WRITE, upload)
            .tool(
                Tool::prepare(
                    "prepare_media_upload",
                    "Prepare a media upload",
                    &[("company_id", "The company (`cmp_…`).")],
                    Change::Upload { max_bytes: MCP_UPLOAD_MAX_BYTES },
                    "Prepare uploading an image or video (at most 1 MiB) for an ad's `media_id`. This executes NOTHING: it checks the file as the write would (type, size, quota) and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
                )
                .reading("getCompany")
                .asking("Upload the file {filename} to the media of {company}; it counts toward the company's storage quota. Webhooks subscribed to media.created are notified."),
            )
            .tag("media")
            .summary("Upload a media file as the raw request body, or as the `file` part of a multipart/form-data body (max 5 MiB). The bytes must match the Content-Type.")
            .describe("Uploads an image or video as the raw request body with its real `Content-Type` (or as the `file` part of a `multipart/form-data` body) and the owning company in the `company_id` query parameter; the bytes must match the declared type. Emits `media.created`. A company stores at most `media.quota_bytes_per_company` bytes (100 MiB by default): an upload past it is 422 `media_quota_exceeded` with `limit`, `used`, `requested` and `available`.")
            .raw_body(CONTENT_TYPES)
            .multipart()
            .query(&[
                Param {
                    required: true,
                    ..param(
                        "company_id",
                        Kind::Company.schema(),
                        "The company that owns the media.",
                    )
                },
                Param {
                    required: true,
                    ..param(
                        "filename",
                        r#"{"type":"string","minLength":1,"maxLength":255,"pattern":"^[^/\\\\\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]{1,255}$"}"#,
                        "The file name to record (no path separators).",
                    )
                },
            ])
            .spooled()
            .blocking()
            .created("Media"),
        // Before `/media/{id}`: a literal route declared first owns its path.
        super::media_usage::route(),
        Route::get("/media/{id}", "getMedia", READ, get)
            .tool(Tool::read(
                "get_media",
                "Get media item",
                &[("media_id", "The media item id (`med_…`), as returned by list_media or shown on an ad.")],
                "A media item's metadata (not its bytes): file name, type, size, dimensions or duration, checksum.",
            ))
            .tag("media")
            .summary("Get a media item's metadata; its bytes are at `download_url`.")
            .describe("One media item's metadata: type, size, SHA-256, dimensions and `download_url`.")
            .ok("Media"),
        Route::get("/media/{id}/content", "downloadMedia", READ, download)
            .no_tool("binary media bytes, not JSON")
            .tag("media")
            .summary("Download the media bytes with their stored Content-Type. ETag is the SHA-256; If-None-Match gives 304.")
            .describe("The stored bytes, under their stored `Content-Type`. The `ETag` is their SHA-256: send it back in `If-None-Match` to get 304 instead of the bytes again.")
            .etag()
            .produces_each(CONTENT_TYPES)
            .may_return(&[304]),
        Route::delete("/media/{id}", "deleteMedia", WRITE, delete)
            .tag("media")
            .summary("Delete a media item. Refused with 409 while ads use it. If-Match takes the download ETag.")
            .describe("Deletes a media item; refused with 409 while an ad uses it. Emits `media.deleted`."),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        crate::jsonschema::named_response::<super::media_usage::Usage>(),
        crate::jsonschema::named_response::<Media>(),
    ]
}

/// A media item's metadata as the API returns it. Field order is the order of the JSON members
/// (`download_url` first, as it always was).
#[derive(Serialize, JsonSchema)]
#[schemars(
    description = "An uploaded image or video: its metadata; the bytes are at `download_url`."
)]
pub struct Media {
    /// Path of the bytes, relative to the API base.
    download_url: String,
    #[schemars(transform = Kind::Media)]
    id: String,
    #[schemars(extend("const" = "media"))]
    object: &'static str,
    company_id: String,
    filename: String,
    #[schemars(transform = &OneOf(CONTENT_TYPES))]
    content_type: String,
    #[schemars(range(min = 0))]
    size_bytes: i64,
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    sha256: String,
    #[schemars(range(min = 0))]
    width: Option<i64>,
    #[schemars(range(min = 0))]
    height: Option<i64>,
    #[schemars(range(min = 0))]
    duration_ms: Option<i64>,
    created_at: Time,
}

// Selecting `content` is avoided everywhere but the download.
const MEDIA_COLUMNS: &str =
    "m.id, m.company_id, m.filename, m.content_type, m.size_bytes, m.sha256,
        m.width, m.height, m.duration_ms, m.created_at";

impl Media {
    /// Reads a row of [`MEDIA_COLUMNS`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Media> {
        let id: String = r.get("id")?;
        Ok(Media {
            download_url: format!("/media/{id}/content"),
            id,
            object: "media",
            company_id: r.get("company_id")?,
            filename: r.get("filename")?,
            content_type: r.get("content_type")?,
            size_bytes: r.get("size_bytes")?,
            sha256: r.get("sha256")?,
            width: r.get("width")?,
            height: r.get("height")?,
            duration_ms: r.get("duration_ms")?,
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl Media {
    /// A row of [`MEDIA_COLUMNS`] as its JSON object, byte for byte `Media`'s (a list page's row).
    fn write_row(r: &crud::Named<'_, '_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        use crate::json_write as w;
        let id = r.str("id")?;
        out.extend_from_slice(br#"{"download_url":"/media/"#);
        debug_assert!(w::needs_no_escape(id));
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(br#"/content","id":"#);
        w::plain(out, id);
        out.extend_from_slice(br#","object":"media","company_id":"#);
        w::plain(out, r.str("company_id")?);
        out.extend_from_slice(br#","filename":"#);
        w::text(out, r.str("filename")?);
        out.extend_from_slice(br#","content_type":"#);
        w::text(out, r.str("content_type")?);
        out.extend_from_slice(br#","size_bytes":"#);
        w::int(out, r.get("size_bytes")?);
        out.extend_from_slice(br#","sha256":"#);
        w::text(out, r.str("sha256")?);
        out.extend_from_slice(br#","width":"#);
        w::opt_int(out, r.get("width")?);
        out.extend_from_slice(br#","height":"#);
        w::opt_int(out, r.get("height")?);
        out.extend_from_slice(br#","duration_ms":"#);
        w::opt_int(out, r.get("duration_ms")?);
        out.extend_from_slice(br#","created_at":"#);
        w::time(out, r.get("created_at")?);
        out.push(b'}');
        Ok(())
    }
}

impl crate::http::response::Listed for Media {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// The subject of the events about a media file (`resource_type` `media`).
pub const MEDIA: crate::routes::payload::SubjectKind = crate::routes::payload::SubjectKind {
    kind: Kind::Media,
    resource: "media",
    table: "media o",
    company: "o.company_id",
};

/// The media area's event payloads ([`crate::routes::payloads`]): the item as `GET /media/{id}`
/// shows it.
pub fn payloads() -> Vec<crate::routes::payload::Payload> {
    use crate::routes::payload::{schema_ref, to_data, Payload};
    vec![
        Payload::new(
            "media.created",
            "A media item was uploaded.",
            &MEDIA,
            schema_ref("Media"),
            |s| {
                let id = MediaId::parse(s.id).ok_or_else(|| ApiError::not_found("media", s.id))?;
                to_data(&load(s.conn, &id)?)
            },
        ),
        Payload::deleted("media.deleted", "A media item was deleted.", &MEDIA),
    ]
}

fn load(conn: &rusqlite::Connection, id: &MediaId) -> Result<Media, ApiError> {
    crud::load(
        conn,
        &format!("SELECT {MEDIA_COLUMNS} FROM media m WHERE m.id = ?1"),
        id,
        Media::from_row,
    )
}

/// Company, content type, SHA-256 and size of a visible media item; invisible or missing is 404.
fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &MediaId,
) -> Result<(String, (String, String, i64)), ApiError> {
    crud::authorized_row(
        ctx,
        conn,
        "SELECT company_id, content_type, sha256, size_bytes FROM media WHERE id = ?1",
        id,
        |r| Ok((r.get(1)?, r.get(2)?, r.get(3)?)),
    )
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let content_type = ctx.query_enum("content_type", CONTENT_TYPES)?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(t) = content_type {
        filters.push(("m.content_type = ?", t.into()));
    }
    let conn = ctx.conn()?;
    crate::routes::page_rows::written_page(
        &conn,
        crate::routes::page_rows::PageQuery {
            select: &format!("SELECT {MEDIA_COLUMNS} FROM media m"),
            owner: crate::routes::queries::Owner::with_account("m.company_id", "m.account_id"),
            id_col: "m.id",
            companies: &companies,
            filters: &filters,
        },
        &page,
        Media::write_row,
        Media::from_row,
    )
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: MediaId = ctx.path()?;
    let conn = ctx.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let media = load(&conn, &id)?;
    Ok(Response::ok(&media))
}

fn valid_filename(s: &str) -> bool {
    let n = s.chars().count();
    (1..=255).contains(&n)
        && !s
            .chars()
            .any(|c| matches!(c, '/' | '\\') || crate::validate::is_control(c))
}

/// Bytes of a file's start that [`magic_matches`] and [`dimensions`] read.
const HEAD_BYTES: usize = 1024;

/// Whether `sent` (whose first bytes are `head`) starts the way files of `content_type` do.
fn magic_matches(content_type: &str, head: &[u8], sent: &Sent) -> Result<bool, ApiError> {
    Ok(match content_type {
        "image/png" => head.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => head.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a"),
        "image/webp" => head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP",
        "video/mp4" => head.len() >= 12 && &head[4..8] == b"ftyp",
        "image/svg+xml" => starts_like_markup(head) && sent.is_text_with(b"<svg")?,
        _ => false,
    })
}

/// Text that starts with markup after an optional BOM and whitespace (of an SVG file, which
/// must also be UTF-8 throughout and have an `<svg` element).
fn starts_like_markup(head: &[u8]) -> bool {
    let head = head.strip_prefix("\u{feff}".as_bytes()).unwrap_or(head);
    head.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'<')
}

/// Pixel size from the header of formats that state it up front: PNG (IHDR) and GIF (an MP4's
/// is in its movie header, [`crate::routes::mp4_header`]).
/// `Err` when a PNG lacks a well-formed IHDR as its first chunk.
fn dimensions(content_type: &str, bytes: &[u8]) -> Result<Option<(i64, i64)>, ()> {
    let be = |b: &[u8]| i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match content_type {
        "image/png" => {
            if bytes.len() < 24 || &bytes[12..16] != b"IHDR" || be(&bytes[8..12]) != 13 {
                return Err(());
            }
            let (w, h) = (be(&bytes[16..20]), be(&bytes[20..24]));
            if w == 0 || h == 0 || w > i64::from(i32::MAX) || h > i64::from(i32::MAX) {
                return Err(());
            }
            Ok(Some((w, h)))
        }
        "image/gif" if bytes.len() >= 10 => {
            let w = i64::from(u16::from_le_bytes([bytes[6], bytes[7]]));
            let h = i64::from(u16::from_le_bytes([bytes[8], bytes[9]]));
            Ok(Some((w, h)))
        }
        _ => Ok(None),
    }
}

fn upload(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sent = Sent::of(ctx)?;
    let company = ctx.query("company_id").unwrap_or("").to_string();
    let filename = ctx.query("filename").unwrap_or("").to_string();
    let mut errors = crate::validate::Errors::new();
    errors.id("company_id", &company, Kind::Company);
    if !valid_filename(&filename) {
        errors.push(
            "filename",
            "invalid_filename",
            "Must be 1 to 255 characters without `/`, `\\` or control characters.",
        );
    }
    errors.finish()?;
    ctx.authorize_company(&company, "company", &company)?;

    let content_type = sent
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let Some(content_type) = CONTENT_TYPES.iter().find(|t| **t == content_type) else {
        return Err(ApiError::UnsupportedMediaType(format!(
            "Send the file as the raw body (or the `file` part of a multipart/form-data body) with one of these Content-Types: {}.",
            CONTENT_TYPES.join(", ")
        )));
    };
    if sent.is_empty() {
        return Err(ApiError::invalid("", "empty", "The file is empty."));
    }
    if sent.len() > MAX_UPLOAD_BYTES {
        return Err(ApiError::PayloadTooLarge {
            limit: MAX_UPLOAD_BYTES,
        });
    }
    let mismatch = || {
        ApiError::invalid(
            "",
            "content_mismatch",
            format!("The bytes are not a valid {content_type} file."),
        )
    };
    let head = sent.head(HEAD_BYTES)?;
    if !magic_matches(content_type, &head, &sent)? {
        return Err(mismatch());
    }
    let (mut width, mut height) = match dimensions(content_type, &head).map_err(|_| mismatch())? {
        Some((w, h)) => (Some(w), Some(h)),
        None => (None, None),
    };
    let mut duration_ms = None;
    if *content_type == "video/mp4" {
        // A file that starts like an MP4 but has no readable movie header is refused: the player
        // could not play it, and the stored size and length would be made up.
        let facts =
            crate::routes::mp4_header::read(sent.len() as u64, &mut |at, n| sent.read_at(at, n))?
                .map_err(|why| {
                ApiError::invalid(
                    "",
                    "content_mismatch",
                    format!("The bytes are not a valid video/mp4 file: {why}."),
                )
            })?;
        (width, height, duration_ms) = (facts.width, facts.height, facts.duration_ms);
    }
    let sha256 = sent.sha256_hex()?;
    let id = ctx.generate::<MediaId>();
    let now = ctx.now();
    let quota = ctx.app.settings.media_quota_bytes_per_company;
    let zeroblob = rusqlite::blob::ZeroBlob(sent.len() as u64);
    ctx.db.write(ctx.intent, |tx| {
        // Summed in the write transaction: two concurrent uploads cannot both pass the quota.
        let used: i64 = tx
            .prepare_cached("SELECT coalesce(sum(size_bytes), 0) FROM media WHERE company_id = ?1")?
            .query_row([&company], |r| r.get(0))?;
        let requested = sent.len() as u64;
        if (used.max(0) as u64).saturating_add(requested) > quota {
            return Err(ApiError::QuotaExceeded {
                code: "media_quota_exceeded",
                detail: format!(
                    "This company stores {used} bytes of media; {requested} more would pass its quota of {quota} bytes. Delete media it no longer uses first."
                ),
                numbers: serde_json::json!({
                    "limit": quota,
                    "used": used,
                    "requested": requested,
                    "available": quota.saturating_sub(used.max(0) as u64),
                }),
            });
        }
        // A spooled file's row gets a zeroblob of its size, filled below. `content` is the row's
        // last column (V31), so SQLite never builds those zeros in memory.
        let in_memory = sent.in_memory();
        let content: &dyn rusqlite::ToSql = match &in_memory {
            Some(bytes) => bytes,
            None => &zeroblob,
        };
        tx.prepare_cached(
            // The account named here: V46's trigger would otherwise fill it by an UPDATE, which
            // rewrites the row with its bytes.
            "INSERT INTO media (id, company_id, filename, content_type, size_bytes, sha256, width,
                                height, duration_ms, created_at, account_id, content)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
                     (SELECT account_id FROM companies WHERE id = ?2), ?11)",
        )?
        .execute(rusqlite::params![
            id,
            company,
            filename,
            content_type,
            sent.len() as i64,
            sha256,
            width,
            height,
            duration_ms,
            now,
            content
        ])?;
        // A spooled file goes from disk into the row's BLOB in chunks, never whole in memory.
        if in_memory.is_none() {
            sent.write_into(tx, "media", "content", tx.last_insert_rowid())?;
        }
        let media = load(tx, &id)?;
        crate::events::record(tx, &company, "media.created", "media", &id, &media)?;
        Ok(Response::created(&media).with_header("location", &format!("/media/{id}")))
    })
}

/// The quoted strong ETag of media bytes.
fn media_etag(sha256: &str) -> String {
    format!("\"{sha256}\"")
}

/// True when a list of entity tags (`If-None-Match`/`If-Match` syntax) contains `etag` or `*`.
/// `weak` allows `W/` tags to match (the weak comparison If-None-Match uses).
fn etag_listed(header: &str, etag: &str, weak: bool) -> bool {
    header.split(',').map(str::trim).any(|t| {
        let t = if weak {
            t.strip_prefix("W/").unwrap_or(t)
        } else {
            t
        };
        t == "*" || t == etag
    })
}

fn download(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: MediaId = ctx.path()?;
    let (content_type, sha256, size) = {
        let conn = ctx.conn()?;
        authorized_owner(ctx, &conn, &id)?.1
    };
    let etag = media_etag(&sha256);
    let mut resp = if ctx
        .header("if-none-match")
        .is_some_and(|h| etag_listed(h, &etag, true))
    {
        Response {
            status: StatusCode::NOT_MODIFIED,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            delivery: Default::default(),
        }
    } else {
        // Sent as the client reads it, never held whole ([`crate::routes::download`]).
        let at = download::Located {
            table: "media",
            column: "content",
            key_column: "id",
            key: id.to_string(),
        };
        let resp = Response::new(StatusCode::OK, &content_type, Bytes::new());
        download::respond(ctx, resp, at, size.max(0) as usize)?
    };
    resp.set_header("etag", &etag);
    resp.set_header("cache-control", CACHE_CONTROL);
    if content_type == "image/svg+xml" {
        resp.set_header("content-security-policy", SVG_CSP);
    }
    Ok(resp)
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: MediaId = ctx.path()?;
    ctx.db.write(ctx.intent, |tx| {
        let (company, (_, sha256, _)) = authorized_owner(ctx, tx, &id)?;
        let etag = media_etag(&sha256);
        ctx.check_if_match_etag(&etag)?;
        let used: i64 = tx
            .prepare_cached("SELECT count(*) FROM ads WHERE media_id = ?1")?
            .query_row([&id], |r| r.get(0))?;
        if used > 0 {
            let named = tx
                .prepare_cached(
                    "SELECT id, name FROM ads WHERE media_id = ?1 ORDER BY id LIMIT ?2",
                )?
                .query_map(rusqlite::params![id, NAMED_BLOCKERS], |r| {
                    Ok(format!(
                        "`{}` ({})",
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(0)?
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let more = if used > NAMED_BLOCKERS {
                format!(" and {} more", used - NAMED_BLOCKERS)
            } else {
                String::new()
            };
            return Err(ApiError::Conflict(format!(
                "This media is used by {used} ad(s): {}{more}. Point those ads at other media or delete them first.",
                named.join(", ")
            )));
        }
        crud::delete_row(tx, "media", "media", &company, &id)?;
        Ok(Response::no_content())
    })
}

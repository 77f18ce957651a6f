//! The one helper every API test uses: spawn the real server on 127.0.0.1 with an ephemeral port and
//! a throw-away database, then talk HTTP to it.

#![allow(dead_code)]

pub mod mcp;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Method, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use signage::config::{Layer, Settings};
use signage::startup::Server;
use std::sync::{Arc, OnceLock};
use tokio::sync::oneshot;

/// A demo credential from `fixtures/demo-credentials.json`.
#[derive(Clone, Debug)]
pub struct DemoKey {
    pub name: String,
    pub raw: String,
    pub client_id: String,
    pub key_id: String,
    pub scopes: Vec<String>,
    pub company_scope: Option<String>,
    pub account_id: String,
    pub status: String,
}

pub struct Demo {
    pub keys: Vec<DemoKey>,
    pub users: Vec<(String, String)>,
    /// (id, name, account_id)
    pub companies: Vec<(String, String, String)>,
}

pub fn demo() -> &'static Demo {
    static DEMO: OnceLock<Demo> = OnceLock::new();
    DEMO.get_or_init(|| {
        let v: Value = serde_json::from_str(signage::db::fixtures::DEMO_CREDENTIALS_JSON).unwrap();
        Demo {
            keys: v["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| DemoKey {
                    name: k["name"].as_str().unwrap().into(),
                    raw: k["rawKey"].as_str().unwrap().into(),
                    client_id: k["client_id"].as_str().unwrap().into(),
                    key_id: k["key_id"].as_str().unwrap().into(),
                    scopes: k["scopes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().into())
                        .collect(),
                    company_scope: k["companyScope"].as_str().map(String::from),
                    account_id: k["account_id"].as_str().unwrap().into(),
                    status: k["status"].as_str().unwrap().into(),
                })
                .collect(),
            users: v["users"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| {
                    (
                        u["username"].as_str().unwrap().into(),
                        u["password"].as_str().unwrap().into(),
                    )
                })
                .collect(),
            companies: v["companies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap().into(),
                        c["name"].as_str().unwrap().into(),
                        c["account_id"].as_str().unwrap().into(),
                    )
                })
                .collect(),
        }
    })
}

/// A fresh, empty directory for one test's database file, and the file's path in it (as text, for
/// `Layer::database`). The directory is named by the test and the process, so parallel tests
/// and runs never share one.
pub fn temp_db(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("signage-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db");
    let text = db.to_str().unwrap().to_string();
    (dir, text)
}

pub fn key(name: &str) -> DemoKey {
    demo()
        .keys
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no demo key {name}"))
        .clone()
}

pub fn company_id(name: &str) -> String {
    demo()
        .companies
        .iter()
        .find(|c| c.1 == name)
        .unwrap_or_else(|| panic!("no demo company {name}"))
        .0
        .clone()
}

pub struct TestApp {
    pub base_url: String,
    pub app: Arc<signage::app::App>,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    shutdown: Option<oneshot::Sender<()>>,
    pub handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl TestResponse {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// Asserts a problem+json error with this status, and returns its body.
    #[track_caller]
    pub fn problem(&self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text());
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let body = self.json();
        for field in ["type", "title", "status", "detail", "request_id"] {
            assert!(body.get(field).is_some(), "problem lacks {field}: {body}");
        }
        assert_eq!(body["status"], status);
        assert_eq!(body["request_id"].as_str(), self.header("request-id"));
        body
    }
    #[track_caller]
    pub fn ok(&self) -> Value {
        assert!(
            self.status.is_success(),
            "status {}: {}",
            self.status,
            self.text()
        );
        self.json()
    }
}

pub struct RequestBuilder<'a> {
    app: &'a TestApp,
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl RequestBuilder<'_> {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    /// Authenticates as a demo key (X-API-KEY + X-Service-Client-Id).
    pub fn key(self, name: &str) -> Self {
        let k = key(name);
        self.header("x-api-key", &k.raw)
            .header("x-service-client-id", &k.client_id)
    }
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }
    pub fn json(mut self, v: &Value) -> Self {
        self.body = Bytes::from(serde_json::to_vec(v).unwrap());
        self.header("content-type", "application/json")
    }
    pub fn raw(mut self, content_type: &str, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self.header("content-type", content_type)
    }
    pub async fn send(self) -> TestResponse {
        let mut req = hyper::Request::builder()
            .method(self.method)
            .uri(format!("{}{}", self.app.base_url, self.path));
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), HeaderValue::from_str(v).unwrap());
        }
        let resp = self
            .app
            .client
            .request(req.body(Full::new(self.body)).unwrap())
            .await
            .expect("request failed");
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        assert!(
            parts.headers.contains_key("request-id"),
            "every response carries Request-Id"
        );
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(|_| {}).await
    }

    pub async fn spawn_with(configure: impl FnOnce(&mut Layer)) -> TestApp {
        let mut layer = Layer {
            port: Some(0),
            database: Some(":memory:".into()),
            ..Layer::default()
        };
        configure(&mut layer);
        let settings = Settings::resolve(&[layer]).expect("settings");
        let server = Server::build(settings).await.expect("server");
        let base_url = server.base_url();
        let app = server.app.clone();
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(server.run_until(async {
            let _ = rx.await;
        }));
        TestApp {
            base_url,
            app,
            client: Client::builder(TokioExecutor::new()).build_http(),
            shutdown: Some(tx),
            handle: Some(handle),
        }
    }

    /// Stops the server gracefully and waits until it has (what a harness's teardown does).
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.handle.take() {
            let _ = handle.await;
        }
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder<'_> {
        RequestBuilder {
            app: self,
            method,
            path: path.to_string(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }
    pub fn get(&self, path: &str) -> RequestBuilder<'_> {
        self.request(Method::GET, path)
    }
    pub fn post(&self, path: &str) -> RequestBuilder<'_> {
        self.request(Method::POST, path)
    }
    pub fn patch(&self, path: &str) -> RequestBuilder<'_> {
        self.request(Method::PATCH, path)
    }
    pub fn put(&self, path: &str) -> RequestBuilder<'_> {
        self.request(Method::PUT, path)
    }
    pub fn delete(&self, path: &str) -> RequestBuilder<'_> {
        self.request(Method::DELETE, path)
    }

    /// Walks a whole list through its cursors; returns every item.
    pub async fn collect_all(&self, path: &str, key_name: &str, limit: u32) -> Vec<Value> {
        let mut items = Vec::new();
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}limit={limit}");
        loop {
            let page = self.get(&url).key(key_name).send().await.ok();
            items.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(c) if page["has_more"] == true => {
                    url = format!("{path}{sep}limit={limit}&cursor={c}")
                }
                _ => break,
            }
        }
        items
    }

    /// Deletes `path` with `If-Match: etag` (204, empty body), then proves it is gone: a GET and a
    /// second DELETE are both 404.
    pub async fn assert_deleted(&self, path: &str, etag: &str) {
        let r = self
            .delete(path)
            .key("northwind-readwrite")
            .header("if-match", etag)
            .send()
            .await;
        assert_eq!(r.status, 204, "{}", r.text());
        assert!(r.body.is_empty());
        self.get(path)
            .key("northwind-readonly")
            .send()
            .await
            .problem(404);
        self.delete(path)
            .key("northwind-readwrite")
            .send()
            .await
            .problem(404);
    }

    /// Runs a read-only SQL query against the server's database file.
    /// Every row of `tables`, as text: what a test compares before and after an
    /// operation that must change nothing.
    pub fn dump_tables(&self, tables: &[&str]) -> String {
        self.sql(|c| {
            let mut out = String::new();
            for table in tables {
                // Scan order: stable for unchanged rows (some tables have no rowid to sort by).
                let mut stmt = c.prepare(&format!("SELECT * FROM {table}"))?;
                let n = stmt.column_count();
                let mut rows = stmt.query([])?;
                while let Some(r) = rows.next()? {
                    for i in 0..n {
                        out.push_str(&format!("{:?}|", r.get_ref(i)?));
                    }
                    out.push('\n');
                }
            }
            Ok(out)
        })
    }

    pub fn sql<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>) -> T {
        let conn = self.app.db.conn().expect("conn");
        f(&conn).expect("sql")
    }

    /// The first webhook (by id) of `company_id`.
    pub fn first_webhook_of(&self, company_id: &str) -> String {
        self.sql(|c| {
            c.query_row(
                "SELECT min(id) FROM webhooks WHERE company_id = ?1",
                [company_id],
                |r| r.get(0),
            )
        })
    }

    /// The server's login-token signing secret, for tests that forge tokens.
    pub fn jwt_secret(&self) -> Vec<u8> {
        use base64::Engine;
        let encoded: String = self.sql(|c| {
            c.query_row(
                "SELECT value FROM server_secrets WHERE name = 'jwt_hs256'",
                [],
                |r| r.get(0),
            )
        });
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap()
    }

    pub async fn login(&self, username: &str, password: &str) -> String {
        let r = self
            .post("/auth/login")
            .json(&serde_json::json!({"username": username, "password": password}))
            .send()
            .await;
        r.ok()["access_token"].as_str().unwrap().to_string()
    }
}

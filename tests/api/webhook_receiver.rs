//! A webhook receiver for the tests: a tiny hyper server on 127.0.0.1:0 (plain or TLS) that keeps
//! every request it gets and answers with the statuses it is told to (then 200), plus an
//! independent Standard Webhooks verifier (written from the specification, not from src/).

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

/// An "answer" that keeps the request waiting instead.
pub const HANG: u16 = 0;

#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Bytes,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Default)]
struct State {
    received: Vec<Received>,
    script: VecDeque<u16>,
}

pub struct Receiver {
    pub port: u16,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// A plain HTTP receiver answering 200.
    pub async fn start() -> Receiver {
        Receiver::start_with(None).await
    }

    /// With `tls`, an HTTPS receiver.
    pub async fn start_with(tls: Option<tokio_rustls::TlsAcceptor>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = Arc::clone(&shared);
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let state = Arc::clone(&state);
                        async move {
                            let path = req.uri().to_string();
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(k, v)| {
                                    (k.as_str().to_string(), v.to_str().unwrap_or("").to_string())
                                })
                                .collect();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let status = {
                                let mut s = state.lock().unwrap();
                                s.received.push(Received {
                                    path,
                                    headers,
                                    body,
                                });
                                s.script.pop_front().unwrap_or(200)
                            };
                            if status == HANG {
                                // Keeps the sender waiting (the request is recorded already).
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                            }
                            let reply = format!("{{\"status\":{status}}}");
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .status(status)
                                    .body(Full::new(Bytes::from(reply)))
                                    .unwrap(),
                            )
                        }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        Some(acceptor) => {
                            if let Ok(s) = acceptor.accept(stream).await {
                                let _ = http.serve_connection(TokioIo::new(s), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                    }
                });
            }
        });
        Receiver { port, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The next requests get these statuses, in order; then 200 again. [`HANG`] never answers.
    pub fn answer(&self, statuses: &[u16]) {
        self.state.lock().unwrap().script.extend(statuses);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Waits (generously: the machine may be busy) until at least `n` requests arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..1500 {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "the receiver got {} requests, expected {n}",
            self.received().len()
        );
    }

    /// The requests of one event type, once `n` of them arrived.
    pub async fn wait_for_type(&self, event_type: &str, n: usize) -> Vec<Received> {
        for _ in 0..1500 {
            let got: Vec<Received> = self
                .received()
                .into_iter()
                .filter(|r| r.json()["type"] == event_type)
                .collect();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no {event_type} delivery arrived");
    }
}

/// Standard Webhooks verification, from the specification: the key is the base64 decoding of the
/// secret after `whsec_`; each space-separated `v1,<sig>` is base64(HMAC-SHA256(key,
/// "{id}.{timestamp}.{body}")). Returns how many of the header's signatures match `secret`.
pub fn signatures_matching(r: &Received, secret: &str) -> usize {
    use hmac::{Hmac, Mac};
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").expect("whsec_ prefix"))
        .expect("base64 secret");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(
        format!(
            "{}.{}.",
            r.header("webhook-id"),
            r.header("webhook-timestamp")
        )
        .as_bytes(),
    );
    mac.update(&r.body);
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    r.header("webhook-signature")
        .split(' ')
        .filter(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
        .count()
}

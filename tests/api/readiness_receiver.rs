//! A webhook receiver for the readiness tests: verifies like a correct receiver (signature with
//! any secret it knows, timestamp within 5 minutes of the wall clock), or like the receivers that
//! get it wrong in one way (accept anything, skip verification without a signature header, check
//! only that a timestamp is not old, refuse everything), or slowly.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

/// How a [`Receiver`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Verifies the signature against every secret it knows and refuses a timestamp more than 5
    /// minutes from the wall clock (both with 401), from the Standard Webhooks specification.
    Careful,
    /// Accepts anything.
    Careless,
    /// Verifies a signature when there is one; without the header, accepts.
    SkipsMissingSignature,
    /// Refuses a timestamp older than 5 minutes, but not one from the future.
    PastOnly,
    /// Refuses everything at once (401).
    RefusesAll,
    /// Careful, but answers after this many milliseconds.
    Slow(u64),
}

/// A webhook receiver answering by its [`Policy`].
pub struct Receiver {
    pub port: u16,
    secrets: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn verified(policy: Policy, secrets: &[String], headers: &hyper::HeaderMap, body: &[u8]) -> bool {
    use hmac::{Hmac, Mac};
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    match policy {
        Policy::Careless => return true,
        Policy::RefusesAll => return false,
        Policy::SkipsMissingSignature if !headers.contains_key("webhook-signature") => return true,
        _ => {}
    }
    let Ok(ts) = h("webhook-timestamp").parse::<i64>() else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let out_of_tolerance = if policy == Policy::PastOnly {
        now - ts > 300
    } else {
        (now - ts).abs() > 300
    };
    if out_of_tolerance {
        return false;
    }
    secrets.iter().any(|secret| {
        let key = base64::engine::general_purpose::STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap();
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{}.{ts}.", h("webhook-id")).as_bytes());
        mac.update(body);
        let expected =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        h("webhook-signature")
            .split(' ')
            .any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
    })
}

impl Receiver {
    /// A careful receiver (`verify`) or one that accepts anything.
    pub async fn start(verify: bool) -> Receiver {
        Receiver::with(if verify {
            Policy::Careful
        } else {
            Policy::Careless
        })
        .await
    }

    pub async fn with(policy: Policy) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let secrets: Arc<Mutex<Vec<String>>> = Arc::default();
        let shared = Arc::clone(&secrets);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let secrets = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let secrets = Arc::clone(&secrets);
                        async move {
                            let headers = req.headers().clone();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let known = secrets.lock().unwrap().clone();
                            if let Policy::Slow(ms) = policy {
                                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                            }
                            let ok = verified(policy, &known, &headers, &body);
                            let status = if ok { 200 } else { 401 };
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .status(status)
                                    .body(Full::new(Bytes::new()))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            port,
            secrets,
            task,
        }
    }
    pub fn knows(&self, secret: &str) {
        self.secrets.lock().unwrap().push(secret.to_string());
    }
}

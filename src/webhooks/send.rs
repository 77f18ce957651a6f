//! One delivery attempt over HTTP(S): resolve the host, check every resolved address against the
//! destination rules ([`crate::outbound::check_address`], so a name that resolves to a refused
//! address is refused at connect time), connect to a checked address, TLS for `https` (rustls, the
//! built-in Mozilla roots plus `webhooks.ca_file`), one HTTP/1.1 `POST`, the status and the first
//! bytes of the response. No redirect is followed (a 3xx is a failed attempt); the whole attempt is
//! bounded by `webhooks.timeout_millis`, resolving the name by `webhooks.dns_timeout_millis`, and a
//! name that failed to resolve fails at once for `webhooks.dns_negative_cache_secs`. One
//! connection per attempt.

use crate::config::Settings;
use crate::outbound::{self, TargetPolicy};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// Bytes of the response body kept in the delivery log.
pub const RESPONSE_PREFIX: usize = 256;

#[derive(Clone)]
pub struct Client {
    tls: tokio_rustls::TlsConnector,
    policy: TargetPolicy,
    timeout: Duration,
    /// This server's own listening address, once bound: where a self-sink URL is delivered
    /// ([`outbound::self_sink`]).
    own: Arc<std::sync::OnceLock<SocketAddr>>,
    /// The time one name may take to resolve (`webhooks.dns_timeout_millis`).
    dns_timeout: Duration,
    /// Names that failed to resolve, until when, and why (`webhooks.dns_negative_cache_secs`).
    dns_failures: Arc<std::sync::Mutex<HashMap<String, (Instant, String)>>>,
    dns_negative_ttl: Duration,
}

/// Names remembered as failing before the expired ones are swept (and, if still full, all).
const DNS_FAILURES_KEPT: usize = 1024;

/// What one attempt got.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Option<u16>,
    pub latency_ms: i64,
    pub response: String,
    pub error: Option<String>,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }

    fn failed(started: Instant, error: String) -> Outcome {
        Outcome {
            status: None,
            latency_ms: elapsed_ms(started),
            response: String::new(),
            error: Some(error),
        }
    }
}

/// The whole error of a failed attempt to an address of a private network.
pub const NOT_REACHABLE: &str = "not reachable";

fn elapsed_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

impl Client {
    /// The client of these settings. Certificates of `webhooks.ca_file` that do not parse are
    /// skipped with a warning (the settings check that the file holds a PEM certificate).
    pub fn new(settings: &Settings) -> Client {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = &settings.webhook_ca_file {
            match CertificateDer::pem_file_iter(path) {
                Ok(certs) => {
                    for cert in certs.flatten() {
                        if let Err(e) = roots.add(cert) {
                            tracing::warn!(path, error = %e, "webhooks.ca_file: certificate skipped");
                        }
                    }
                }
                Err(e) => tracing::warn!(path, error = %e, "webhooks.ca_file: cannot read"),
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(roots).with_no_client_auth())
            .unwrap_or_else(|_| {
                // The ring provider supports the default versions; this arm is never taken.
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
        Client {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            policy: TargetPolicy {
                allow_private: settings.webhook_allow_private_targets,
            },
            timeout: Duration::from_millis(settings.webhook_timeout_millis),
            own: Arc::default(),
            dns_timeout: Duration::from_millis(settings.webhook_dns_timeout_millis),
            dns_failures: Arc::default(),
            dns_negative_ttl: Duration::from_secs(settings.webhook_dns_negative_cache_secs),
        }
    }

    /// Tells the client where this server listens (start-up, once bound).
    pub fn set_own_address(&self, addr: SocketAddr) {
        let addr = if addr.ip().is_unspecified() {
            SocketAddr::from(([127, 0, 0, 1], addr.port()))
        } else {
            addr
        };
        let _ = self.own.set(addr);
    }

    /// The port this server listens on, once bound (what a self-sink URL may name).
    pub fn own_port(&self) -> Option<u16> {
        self.own.get().map(SocketAddr::port)
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, String)>> {
        // A poisoned lock only means a panic elsewhere; the cache is plain data.
        self.dns_failures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves `host`, at most `dns_timeout`; a failure is remembered for `dns_negative_ttl`, so
    /// the deliveries to a name that does not resolve fail at once instead of each waiting on DNS.
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let now = Instant::now();
        if let Some((until, why)) = self.failures().get(host) {
            if *until > now {
                let left = until.duration_since(now).as_secs().max(1);
                return Err(format!("{why} (remembered; resolved again in {left} s)"));
            }
        }
        let lookup = tokio::net::lookup_host((host, port));
        let result = match tokio::time::timeout(self.dns_timeout, lookup).await {
            Err(_) => Err(format!(
                "cannot resolve {host}: no answer within {} ms",
                self.dns_timeout.as_millis()
            )),
            Ok(Err(e)) => Err(format!("cannot resolve {host}: {e}")),
            Ok(Ok(addrs)) => Ok(addrs.collect::<Vec<_>>()),
        };
        match &result {
            Err(why) if !self.dns_negative_ttl.is_zero() => {
                let mut failures = self.failures();
                if failures.len() >= DNS_FAILURES_KEPT {
                    failures.retain(|_, (until, _)| *until > now);
                    if failures.len() >= DNS_FAILURES_KEPT {
                        failures.clear();
                    }
                }
                failures.insert(host.to_string(), (now + self.dns_negative_ttl, why.clone()));
            }
            Ok(_) => {
                self.failures().remove(host);
            }
            Err(_) => {}
        }
        result
    }

    /// Sends `body` to `url` with `headers`; never fails, the outcome says what happened.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Outcome {
        let started = Instant::now();
        let private = AtomicBool::new(false);
        let attempt = self.attempt(url, headers, body, started, &private);
        let outcome = match tokio::time::timeout(self.timeout, attempt).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::failed(
                started,
                format!("timed out after {} ms", self.timeout.as_millis()),
            ),
        };
        // A private network's address that gave no HTTP answer says only that: whether its port was closed
        // (refused at once) or filtered (a timeout), and how long that took, would make the
        // delivery log a scanner of the network the sandbox runs in.
        if outcome.status.is_none() && private.load(Ordering::Relaxed) {
            return Outcome {
                latency_ms: 0,
                error: Some(NOT_REACHABLE.to_string()),
                ..outcome
            };
        }
        outcome
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
        started: Instant,
        private: &AtomicBool,
    ) -> Outcome {
        let Some(target) = Target::parse(url) else {
            return Outcome::failed(started, "the URL cannot be parsed".into());
        };
        let stream = match self.connect(&target, private).await {
            Ok(s) => s,
            Err(e) => return Outcome::failed(started, e),
        };
        let result = if target.https {
            let name = match ServerName::try_from(target.host.clone()) {
                Ok(n) => n,
                Err(e) => return Outcome::failed(started, format!("TLS server name: {e}")),
            };
            match self.tls.connect(name, stream).await {
                Ok(tls) => exchange(tls, &target, headers, body).await,
                Err(e) => Err(format!("TLS: {e}")),
            }
        } else {
            exchange(stream, &target, headers, body).await
        };
        match result {
            Ok((status, response)) => Outcome {
                status: Some(status),
                latency_ms: elapsed_ms(started),
                response,
                error: None,
            },
            Err(e) => Outcome::failed(started, e),
        }
    }

    /// Resolves the host and connects to the first address the destination rules allow; a
    /// self-sink URL connects to this server's own listener, and only there.
    /// `private` is set once an address tried is of a private network.
    async fn connect(&self, target: &Target, private: &AtomicBool) -> Result<TcpStream, String> {
        if let Some(own) = self.own.get() {
            let url = format!("http://{}{}", target.authority, target.path);
            if !target.https && outbound::self_sink(&url, Some(own.port())).is_some() {
                let s = TcpStream::connect(own)
                    .await
                    .map_err(|e| format!("cannot connect to this sandbox's sink at {own}: {e}"))?;
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
        }
        let addrs = self.resolve(&target.host, target.port).await?;
        let mut last = format!("{} resolved to no address", target.host);
        for addr in addrs {
            if let Err(refusal) = outbound::check_address(addr.ip(), self.policy) {
                last = format!("refused {}: {}", addr.ip(), refusal.code());
                continue;
            }
            if outbound::is_private(addr.ip()) {
                private.store(true, Ordering::Relaxed);
            }
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(last)
    }
}

/// The request on an open connection: status and the first bytes of the response body.
async fn exchange<S>(
    stream: S,
    target: &Target,
    headers: &[(&'static str, String)],
    body: Bytes,
) -> Result<(u16, String), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut request = hyper::Request::post(target.path.as_str())
        .header("host", target.authority.as_str())
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("signage-webhooks/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(body))
        .map_err(|e| format!("request: {e}"))?;
    let result = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut kept = Vec::new();
        while kept.len() < RESPONSE_PREFIX {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        kept.extend_from_slice(data);
                    }
                }
                // A broken body after the status still counts as the receiver's answer.
                Some(Err(_)) | None => break,
            }
        }
        kept.truncate(RESPONSE_PREFIX);
        Ok((status, String::from_utf8_lossy(&kept).into_owned()))
    }
    .await;
    driver.abort();
    result
}

/// The parts of a webhook URL a request needs.
#[derive(Debug, PartialEq)]
struct Target {
    https: bool,
    /// Without IPv6 brackets (what DNS and TLS take).
    host: String,
    port: u16,
    /// `host[:port]` as written (the Host header).
    authority: String,
    /// Path and query; `/` when empty. The fragment is dropped.
    path: String,
}

impl Target {
    fn parse(url: &str) -> Option<Target> {
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return None;
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let mut path = rest[end..].split('#').next().unwrap_or("").to_string();
        if path.is_empty() || path.starts_with('?') {
            path.insert(0, '/');
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p.parse().ok()?),
                None if after.is_empty() => None,
                None => return None,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p.parse().ok()?)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return None;
        }
        Some(Target {
            https,
            host,
            port: port.unwrap_or(if https { 443 } else { 80 }),
            authority: authority.to_string(),
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_that_does_not_resolve_fails_within_the_timeout_and_is_remembered() {
        let settings = Settings {
            webhook_dns_timeout_millis: 300,
            ..Settings::default()
        };
        let client = Client::new(&settings);
        let started = Instant::now();
        let first = client
            .resolve("no-such-host.invalid", 80)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{first}");
        assert!(
            first.starts_with("cannot resolve no-such-host.invalid"),
            "{first}"
        );
        let started = Instant::now();
        let second = client
            .resolve("no-such-host.invalid", 80)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(100));
        assert!(second.contains("remembered"), "{second}");
        // A name that resolves is not affected.
        assert!(client.resolve("127.0.0.1", 80).await.is_ok());
    }

    #[test]
    fn urls_parse_into_what_a_request_needs() {
        let t = Target::parse("https://[::1]:8443/hook?x=1#frag").unwrap();
        assert_eq!(
            (t.https, t.host.as_str(), t.port, t.path.as_str()),
            (true, "::1", 8443, "/hook?x=1")
        );
        let t = Target::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.authority.as_str()),
            (9, "/", "127.0.0.1:9")
        );
        assert_eq!(Target::parse("https://example.com").unwrap().port, 443);
        assert!(Target::parse("ftp://x/").is_none());
        assert!(Target::parse("http://user@host/").is_none());
        assert!(Target::parse("http://:80/").is_none());
    }
}

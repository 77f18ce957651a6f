//! Tests: delivery to an `https` receiver whose certificate comes from a test CA (made with rcgen),
//! trusted through `webhooks.ca_file`, and refused without it.

use crate::helpers::TestApp;
use crate::webhook_delivery::hook;
use crate::webhook_receiver::{signatures_matching, Receiver};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// A CA (its PEM) and an HTTPS receiver with a certificate it signed for localhost and 127.0.0.1.
async fn https_receiver() -> (String, Receiver) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "signage test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    (ca.pem(), Receiver::start_with(Some(acceptor)).await)
}

fn ca_file(pem: &str) -> String {
    let path = std::env::temp_dir().join(format!("signage-test-ca-{}.pem", std::process::id()));
    let path = path.with_extension(format!("{}.pem", rand_suffix()));
    std::fs::write(&path, pem).unwrap();
    path.to_string_lossy().into_owned()
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[tokio::test]
async fn an_https_receiver_with_a_test_ca_gets_signed_deliveries() {
    let (pem, rx) = https_receiver().await;
    let file = ca_file(&pem);
    let app = TestApp::spawn_with(|l| l.webhook_ca_file = Some(file.clone())).await;
    let url = format!("https://localhost:{}/secure", rx.port);
    let (id, secret) = hook(&app, &url, &["ad.updated"]).await;
    let r = app
        .post(&format!("/webhooks/{id}/test"))
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "succeeded", "{}", r.text());
    let got = rx.wait_for(1).await;
    assert_eq!(got[0].path, "/secure");
    assert_eq!(signatures_matching(&got[0], &secret), 1);
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn without_the_ca_the_certificate_is_refused() {
    let (_, rx) = https_receiver().await;
    let app = TestApp::spawn().await;
    let url = format!("https://localhost:{}/secure", rx.port);
    let (id, _) = hook(&app, &url, &["ad.updated"]).await;
    let r = app
        .post(&format!("/webhooks/{id}/test"))
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let d = r.json();
    assert_eq!(d["status"], "pending");
    let error = d["attempts"][0]["error"].as_str().unwrap();
    assert!(error.starts_with("TLS:"), "{error}");
    assert!(rx.received().is_empty());
}

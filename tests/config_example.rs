//! `signage.toml.example` must stay a valid config that documents every key with its default.

#[test]
fn the_example_config_parses_and_matches_the_defaults() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("signage.toml.example");
    let layer = signage::config::Layer::from_file(&path).expect("example parses");
    let from_file = signage::config::Settings::resolve(&[layer]).expect("valid");
    let defaults = signage::config::Settings::default();
    assert_eq!(format!("{from_file:?}"), format!("{defaults:?}"));
}

#[test]
fn a_typo_in_the_config_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("signage-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[server]\nlisten_addr = \"127.0.0.1:1\"\n").unwrap();
    let err = signage::config::Layer::from_file(&path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("listen_addr"), "{err}");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:9\"\n[database]\npath = \"x.db\"\n",
    )
    .unwrap();
    let file = signage::config::Layer::from_file(&path).unwrap();
    let env = signage::config::Layer::from_env(|k| {
        (k == "SIGNAGE_DATABASE").then(|| "env.db".to_string())
    })
    .unwrap();
    let flags = signage::config::Layer {
        port: Some(0),
        ..Default::default()
    };
    let s = signage::config::Settings::resolve(&[file, env, flags]).unwrap();
    assert_eq!(s.listen.to_string(), "127.0.0.1:0");
    assert_eq!(s.database, "env.db");
    let _ = std::fs::remove_dir_all(&dir);
}

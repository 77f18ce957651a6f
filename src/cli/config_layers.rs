//! The configuration layers every command starts from: the file, then the environment. Shared
//! by `cli.rs` and the demo command, so it imports neither.

use crate::config::Layer;
use std::path::PathBuf;

/// File layer (explicit path, $SIGNAGE_CONFIG, or ./signage.toml if it exists) then environment.
pub(super) fn base_layers(config: &Option<PathBuf>) -> Result<Vec<Layer>, String> {
    let path = config
        .clone()
        .or_else(|| std::env::var_os("SIGNAGE_CONFIG").map(PathBuf::from))
        .or_else(|| {
            let p = PathBuf::from("signage.toml");
            p.exists().then_some(p)
        });
    let mut layers = Vec::new();
    if let Some(p) = path {
        layers.push(Layer::from_file(&p).map_err(|e| e.to_string())?);
    }
    layers.push(Layer::from_env(|k| std::env::var(k).ok()).map_err(|e| e.to_string())?);
    Ok(layers)
}

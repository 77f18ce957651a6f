//! Logging setup. Logs go to stderr (stdout carries the bound URL for test harnesses), as pretty
//! text or JSON lines. Request logs carry the request id and route pattern, never headers or bodies.

use crate::config::LogFormat;
use tracing_subscriber::EnvFilter;

pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_env("SIGNAGE_LOG")
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // A second init (tests starting several servers) is harmless; ignore it.
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

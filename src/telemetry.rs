//! Logging setup. Logs go to stderr (stdout carries the bound URL for test harnesses), as pretty
//! text or JSON lines. Request logs carry the request id and route pattern, never headers or bodies.
//!
//! Lines are gathered in one buffer and written to stderr when it holds [`FLUSH_AT`] bytes, every
//! [`FLUSH_EVERY`], and at exit ([`flush`]): a `write` system call per access-log line was the
//! largest cost of a cheap request (about a quarter of `/health`). Warnings and errors are written
//! at once, so nothing that explains a failure waits. A `kill -9` can lose at most the last
//! [`FLUSH_EVERY`] of info lines.

use crate::config::LogFormat;
use std::io::Write;
use std::sync::{Mutex, Once};
use std::time::Duration;
use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Bytes gathered before a write.
pub const FLUSH_AT: usize = 32 * 1024;
/// The longest an info line waits.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

static BUFFER: Mutex<Vec<u8>> = Mutex::new(Vec::new());

pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_env("SIGNAGE_LOG")
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a terminal: in a log file the escape codes are noise, and writing them was
    // about a tenth of the access log's cost.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(BufferedStderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    // A second init (tests starting several servers) is harmless; ignore it.
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    static FLUSHER: Once = Once::new();
    FLUSHER.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("log-flush".into())
            .spawn(|| loop {
                std::thread::sleep(FLUSH_EVERY);
                flush();
            });
    });
}

/// Writes out whatever the buffer holds. Call before the process exits.
pub fn flush() {
    let mut buf = BUFFER.lock().unwrap_or_else(|e| e.into_inner());
    write_out(&mut buf);
}

fn write_out(buf: &mut Vec<u8>) {
    if buf.is_empty() {
        return;
    }
    // Logging must never fail a request: a closed or full stderr drops the lines.
    let _ = std::io::stderr().lock().write_all(buf);
    buf.clear();
}

/// The writer the log formatter gets for each event: one `write` per formatted line.
#[derive(Clone, Copy)]
struct BufferedStderr;

struct LineSink {
    immediate: bool,
}

impl<'a> MakeWriter<'a> for BufferedStderr {
    type Writer = LineSink;

    fn make_writer(&'a self) -> LineSink {
        LineSink { immediate: false }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LineSink {
        // In tracing, a level compares lower the more severe it is.
        LineSink {
            immediate: *meta.level() <= Level::WARN,
        }
    }
}

impl Write for LineSink {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut buf = BUFFER.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(line);
        if self.immediate || buf.len() >= FLUSH_AT {
            write_out(&mut buf);
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

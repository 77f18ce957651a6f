//! Start-up: settings -> app -> bound listener -> serving until a shutdown signal.

use crate::app::App;
use crate::config::Settings;
use crate::db::{DbError, OpenReport};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// A built application bound to its address, not yet serving.
pub struct Server {
    pub app: Arc<App>,
    listener: TcpListener,
    addr: SocketAddr,
    pub report: OpenReport,
}

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

impl Server {
    /// Opens the database (migrations, fixtures) on a blocking thread and binds the listener.
    pub async fn build(settings: Settings) -> Result<Server, StartupError> {
        let listen = settings.listen;
        let (app, report) = tokio::task::spawn_blocking(move || App::build(settings))
            .await
            .map_err(|e| DbError::Migration(format!("start-up task failed: {e}")))??;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| StartupError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartupError::Bind {
            addr: listen,
            source,
        })?;
        let mut app = app;
        // Short links need a base a client can reach: when none is configured, the bound address.
        if app.settings.public_base_url.is_none() {
            app.settings.public_base_url = Some(crate::config::public_base_url_for(addr));
        }
        // Deliveries to the built-in sink go to this listener.
        if let Some(outbox) = app.extensions.get::<Arc<crate::webhooks::Outbox>>() {
            outbox.client.set_own_address(addr);
        }
        Ok(Server {
            app: Arc::new(app),
            listener,
            addr,
            report,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves until `shutdown` resolves. On the system clock, a background tick runs what falls
    /// due (promotion windows, expiries, the simulated fleet) every `sandbox.tick_millis`; a frozen
    /// clock runs it only when advanced.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> std::io::Result<()> {
        let ticker = (self.app.clock().mode() == crate::time::Mode::System)
            .then(|| tokio::spawn(tick(Arc::clone(&self.app))));
        let deliveries = self
            .app
            .extensions
            .get::<Arc<crate::webhooks::Outbox>>()
            .cloned()
            .map(|outbox| tokio::spawn(crate::webhooks::worker(Arc::clone(&self.app), outbox)));
        let app = Arc::clone(&self.app);
        let served = crate::http::server::serve(self.app, self.listener, shutdown).await;
        crate::http::observe::stopping(&app);
        if let Some(t) = ticker {
            t.abort();
        }
        if let Some(d) = deliveries {
            d.abort();
        }
        served
    }
}

/// The system clock's tick: each one runs the timeline up to now on a blocking thread. A failed
/// run is logged and retried on the next tick.
async fn tick(app: Arc<App>) {
    let period = std::time::Duration::from_millis(app.settings.sandbox_tick_millis);
    // The first tick one period after start: start-up has settled the states already.
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let app = Arc::clone(&app);
        let ran = tokio::task::spawn_blocking(move || {
            crate::routes::time_driven::tick(&app, app.db.unscoped(), app.clock().now())
        })
        .await;
        match ran {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::warn!(error = %err, "sandbox tick failed"),
            Err(err) => tracing::warn!(error = %err, "sandbox tick panicked"),
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

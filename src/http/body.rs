//! Reading a request body: within a size limit and a time budget, into memory the server bounds.
//!
//! Every body held in memory at once shares one budget ([`Buffered`], [`BUFFERED_BYTES`]): a
//! body takes its bytes from it as they arrive (all of a declared `Content-Length` up front) and
//! gives them back when its request has been answered. A body that finds the budget spent waits
//! for it within its own time budget, and past that is answered 408 like any slow body. So many
//! large bodies at once queue rather than multiply the server's memory. One account's bodies hold
//! at most half the budget at once (never less than one body of the largest size), so a key
//! sending slow bodies cannot make every other account's bodies wait: the bytes are shared per
//! account, as connection slots are ([`super::admission`]).

use super::error::ApiError;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of request bodies held in memory at once, all requests together.
pub const BUFFERED_BYTES: usize = 32 * 1024 * 1024;
/// The budget's unit: permits are KiB, so the semaphore's counts stay small.
const UNIT: usize = 1024;

/// The budget of body bytes in memory.
pub struct Buffered {
    permits: Arc<Semaphore>,
    /// What one account's bodies may hold at once, and each account's share in use.
    account_units: usize,
    accounts: std::sync::Mutex<std::collections::HashMap<String, Arc<Semaphore>>>,
}

/// Bytes taken from the budget; given back when dropped.
#[derive(Default)]
pub struct Held(Vec<OwnedSemaphorePermit>);

impl Buffered {
    /// A budget of `bytes`, never less than one body of `max_body` bytes (so every allowed body
    /// can be read).
    pub fn new(bytes: usize, max_body: usize) -> Buffered {
        let units = bytes.max(max_body).div_ceil(UNIT);
        Buffered {
            permits: Arc::new(Semaphore::new(units)),
            account_units: (units / 2).max(max_body.div_ceil(UNIT)).min(units),
            accounts: Default::default(),
        }
    }

    /// Takes `bytes` for a body of `account` (none for a public route's, which the connection
    /// bounds already cap): from the account's share first, then from the whole budget.
    pub(super) async fn take(&self, bytes: usize, held: &mut Held, account: Option<&str>) {
        let units = (bytes.div_ceil(UNIT)).min(self.account_units) as u32;
        if units == 0 {
            return;
        }
        if let Some(account) = account {
            let share = {
                let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
                // Shares nobody holds a byte of are dropped as others are made: the map stays
                // as small as the accounts sending bodies at once.
                if !accounts.contains_key(account) {
                    let full = self.account_units;
                    accounts.retain(|_, s| s.available_permits() < full);
                }
                accounts
                    .entry(account.to_string())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.account_units)))
                    .clone()
            };
            if let Ok(p) = share.acquire_many_owned(units).await {
                held.0.push(p);
            }
        }
        if let Ok(p) = self.permits.clone().acquire_many_owned(units).await {
            held.0.push(p);
        }
    }
}

/// What a body may be: at most `max_bytes`, all of it within `timeout` of its head.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bytes: usize,
    pub timeout: Duration,
}

/// Reads a whole body into one buffer. A declared length over the limit is refused before a byte
/// is read; the bytes are taken from `budget` as they come, and held until the returned [`Held`]
/// is dropped.
pub async fn read(
    body: Incoming,
    declared: Option<u64>,
    limits: Limits,
    budget: &Buffered,
    account: Option<&str>,
) -> (Result<Bytes, ApiError>, Held) {
    if declared.is_some_and(|n| n > limits.max_bytes as u64) {
        return (
            Err(ApiError::PayloadTooLarge {
                limit: limits.max_bytes,
            }),
            Held::default(),
        );
    }
    let secs = limits.timeout.as_secs().max(1);
    let mut held = Held::default();
    // A small body is usually in hand already, read with its head: it is taken without a timer.
    // Arming one costs more than the read: a timer earlier than any the runtime holds wakes the
    // worker thread parked on the timer driver, a cross-thread wake for every request with a body.
    let result = {
        let mut read = std::pin::pin!(read_within(
            body,
            declared,
            limits.max_bytes,
            budget,
            account,
            &mut held
        ));
        match poll_once(read.as_mut()).await {
            Some(result) => result,
            None => match tokio::time::timeout(limits.timeout, read).await {
                Err(_) => Err(ApiError::RequestTimeout { secs }),
                Ok(result) => result,
            },
        }
    };
    (result, held)
}

/// Polls `fut` once: its output if it is ready now, else `None` (and `fut` can be polled on).
async fn poll_once<F: std::future::Future>(mut fut: std::pin::Pin<&mut F>) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match fut.as_mut().poll(cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

async fn read_within(
    mut body: Incoming,
    declared: Option<u64>,
    limit: usize,
    budget: &Buffered,
    account: Option<&str>,
    held: &mut Held,
) -> Result<Bytes, ApiError> {
    // A declared length is taken from the budget whole, so that bodies waiting for the budget
    // never each hold a part of it; one without is taken chunk by chunk.
    let declared = declared.map(|n| n as usize);
    if let Some(n) = declared {
        budget.take(n, held, account).await;
    }
    // A declared length is only a hint: a client may promise much and send little, so the buffer
    // grows as bytes come, from at most 64 KiB.
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(64 * 1024));
    let mut taken = declared.unwrap_or(0);
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|_| ApiError::BadRequest("The request body could not be read.".into()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            if buf.is_empty() && declared == Some(data.len()) {
                return Ok(data);
            }
            let need = buf.len() + data.len();
            if need > taken {
                budget.take(need - taken, held, account).await;
                taken = need;
            }
            if buf.capacity() < need {
                // Exactly the declared length when it holds; else doubling, never past the limit.
                let target = match declared {
                    Some(n) if n >= need => n,
                    _ => need.max(buf.capacity() * 2).min(limit),
                };
                buf.reserve_exact(target - buf.len());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buf))
}

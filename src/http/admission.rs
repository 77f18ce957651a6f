//! Which connections the server holds: at most `max_connections`, and of those, the ones not yet
//! authenticated bounded per client address and in all, so that no client can hold every slot.
//!
//! Every connection starts *unauthenticated* and becomes *authenticated* for good when one of its
//! requests carries a valid credential in its headers ([`Admission::authenticated`]). An
//! unauthenticated connection is cheap to let go: it has proven nothing, and a client that really
//! has a request sends its head at once. So when a new connection comes and
//! - its address already holds `server.max_unauthenticated_per_address` unauthenticated
//!   connections, the oldest of those is closed;
//! - the unauthenticated connections hold three quarters of `max_connections` (the last quarter is
//!   kept for authenticated ones), the oldest of all is closed;
//! - every slot is taken, the oldest unauthenticated one is closed.
//!
//! Only a connection that is *stalled* may be closed so: not running a request (its handler has
//! not started), and in its current phase (waiting for a request head, or reading a body) for at
//! least [`GRACE`] (a quarter of the unauthenticated timeout when that is shorter). A client with
//! a request sends it at once, so a burst of new connections from one harness is never cut; when
//! nothing can be closed, the new connection waits for room ([`Admitted::Wait`]) for up to the
//! unauthenticated timeout, and is then answered 503 and closed.
//!
//! Authenticated connections are shared fairly between accounts, as rate limits and webhook
//! delivery slots are: a valid credential, even a read-only key, must not be able to hold every
//! slot with slow bodies or idle keep-alives. When no unauthenticated connection can be closed, the
//! oldest stalled connection of the account holding the most is closed, if that account holds more
//! than its share: the slots divided among the accounts holding any, and one more for whoever is
//! knocking (so one account alone keeps at most half while another waits). A connection running a
//! handler is never closed. Past that, new connections wait in the kernel's backlog
//! ([`Admission::room`]).
//!
//! Addresses are compared whole for IPv4 and by their /64 for IPv6 (one host easily holds a whole
//! /64).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a connection must have been in its current phase before it may be closed to make
/// room (or a quarter of the unauthenticated timeout, when that is shorter).
pub const GRACE: Duration = Duration::from_millis(250);

/// One connection as the server and the admission see it.
pub struct Conn {
    id: u64,
    /// The client address as admission groups it ([`client_of`]).
    client: IpAddr,
    start: Instant,
    /// Milliseconds since `start` when a byte last moved.
    last_ms: AtomicU64,
    /// Milliseconds since `start` when the connection began waiting for its next request head.
    waiting_ms: AtomicU64,
    /// Milliseconds since `start` when its current phase began: waiting for a head (at accept, or
    /// when an answer was done), or reading a request (when its head arrived).
    phase_ms: AtomicU64,
    /// Requests whose service future is alive (head read, answer not yet handed to hyper).
    in_flight: AtomicUsize,
    /// Answers handed to hyper whose bodies are still being written ([`Answering`]).
    answering: AtomicUsize,
    /// A handler is running (the body is in); such a connection is not closed to make room.
    running: AtomicUsize,
    authenticated: AtomicBool,
    /// The account whose credential authenticated the connection (its first one).
    account: std::sync::OnceLock<String>,
    /// Set when admission closes this connection to make room.
    evicted: Notify,
    /// The answer handed to hyper and not yet written: whether its client is still there is
    /// looked at once, as its first bytes go out ([`Conn::take_unwritten`]).
    unwritten: std::sync::Mutex<Option<super::request::Hangup>>,
}

impl Conn {
    /// The answer of a request is handed to hyper, to be written.
    pub fn answer_unwritten(&self, hangup: super::request::Hangup) {
        *self.unwritten.lock().unwrap_or_else(|e| e.into_inner()) = Some(hangup);
    }
    /// The answer handed to hyper and not yet written, once.
    pub fn take_unwritten(&self) -> Option<super::request::Hangup> {
        self.unwritten
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Relaxed)
    }
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
    /// A byte moved.
    pub fn touch(&self) {
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
    }
    /// How long since a byte last moved.
    pub fn idle_for(&self) -> Duration {
        Duration::from_millis(
            self.now_ms()
                .saturating_sub(self.last_ms.load(Ordering::Relaxed)),
        )
    }
    /// How long the connection has waited for its next request head: zero while a request is
    /// served or its answer's body is still being written (an event stream may stay open for
    /// minutes), else since the last answer was written whole.
    pub fn waiting_for(&self) -> Duration {
        if self.busy() || self.answering.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(
            self.now_ms()
                .saturating_sub(self.waiting_ms.load(Ordering::Relaxed)),
        )
    }
    pub fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }
    /// Not running a request, and in its current phase for at least `grace`.
    fn stalled(&self, grace: Duration) -> bool {
        self.running.load(Ordering::Relaxed) == 0
            && self
                .now_ms()
                .saturating_sub(self.phase_ms.load(Ordering::Relaxed))
                >= grace.as_millis() as u64
    }
    /// Resolves when admission closed this connection to make room.
    pub async fn evicted(&self) {
        self.evicted.notified().await
    }
}

/// Marks a request as being served for as long as it lives (from its head to its answer).
pub struct Busy(Arc<Conn>);

impl Busy {
    pub fn enter(conn: &Arc<Conn>) -> Busy {
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        conn.phase_ms.store(conn.now_ms(), Ordering::Relaxed);
        Busy(conn.clone())
    }
}

impl Busy {
    /// The answer is handed to hyper: the request is no longer served, and its body is being
    /// written until the returned mark is dropped (hyper drops the body once written, or with the
    /// connection).
    pub fn answered(self) -> Answering {
        let conn = self.0.clone();
        conn.answering.fetch_add(1, Ordering::Relaxed);
        drop(self);
        Answering(conn)
    }
}

/// An answer's body being written ([`Busy::answered`]); the wait for the next request head
/// starts when it is dropped.
pub struct Answering(Arc<Conn>);

impl Drop for Answering {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.answering.fetch_sub(1, Ordering::Relaxed);
        conn.waiting_ms.store(conn.now_ms(), Ordering::Relaxed);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.in_flight.fetch_sub(1, Ordering::Relaxed);
        // One clock read for the three marks (a byte moved; the wait and a phase begin).
        let now = conn.now_ms();
        conn.last_ms.store(now, Ordering::Relaxed);
        conn.waiting_ms.store(now, Ordering::Relaxed);
        conn.phase_ms.store(now, Ordering::Relaxed);
    }
}

/// Marks a handler as running (the connection is not closed to make room meanwhile).
pub struct Running(Arc<Conn>);

impl Running {
    pub fn enter(conn: &Arc<Conn>) -> Running {
        conn.running.fetch_add(1, Ordering::Relaxed);
        Running(conn.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    total: usize,
    /// Unauthenticated connections by id: ids grow, so the first is the oldest.
    unauthenticated: BTreeMap<u64, Arc<Conn>>,
    per_client: HashMap<IpAddr, usize>,
    /// Authenticated connections by id, oldest first, and how many each account holds.
    authenticated: BTreeMap<u64, Arc<Conn>>,
    per_account: HashMap<String, usize>,
}

impl State {
    fn forget(&mut self, conn: &Conn) -> bool {
        if self.unauthenticated.remove(&conn.id).is_none() {
            return false;
        }
        if let Some(n) = self.per_client.get_mut(&conn.client) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&conn.client);
            }
        }
        true
    }

    /// Forgets an authenticated connection; false when it was not one (or was closed already).
    fn forget_authenticated(&mut self, conn: &Conn) -> bool {
        if self.authenticated.remove(&conn.id).is_none() {
            return false;
        }
        if let Some(account) = conn.account.get() {
            if let Some(n) = self.per_account.get_mut(account) {
                *n -= 1;
                if *n == 0 {
                    self.per_account.remove(account);
                }
            }
        }
        true
    }

    /// The oldest stalled connection of the account holding the most, when that account holds
    /// more than its share of `max_total` (see the module's text).
    fn over_share(&self, max_total: usize, grace: Duration) -> Option<Arc<Conn>> {
        let (account, held) = self.per_account.iter().max_by_key(|(_, n)| **n)?;
        let share = max_total / (self.per_account.len() + 1);
        if *held <= share.max(1) {
            return None;
        }
        self.authenticated
            .values()
            .find(|c| c.account.get() == Some(account) && c.stalled(grace))
            .cloned()
    }

    /// Closes [`State::over_share`]'s connection. False when there is none.
    fn evict_over_share(&mut self, max_total: usize, grace: Duration) -> bool {
        let Some(victim) = self.over_share(max_total, grace) else {
            return false;
        };
        self.forget_authenticated(&victim);
        self.total -= 1;
        victim.evicted.notify_one();
        true
    }

    /// Closes the oldest stalled unauthenticated connection (of `client`, when given). False when
    /// there is none.
    fn evict_oldest(&mut self, client: Option<IpAddr>, grace: Duration) -> bool {
        let victim = self
            .unauthenticated
            .values()
            .find(|c| client.is_none_or(|a| c.client == a) && c.stalled(grace))
            .cloned();
        let Some(victim) = victim else { return false };
        self.forget(&victim);
        self.total -= 1;
        victim.evicted.notify_one();
        true
    }
}

pub struct Admission {
    max_total: usize,
    max_unauthenticated: usize,
    per_client: usize,
    grace: Duration,
    state: Mutex<State>,
    freed: Notify,
    /// Accepted connections waiting for room ([`Admitted::Wait`]).
    waiting: AtomicUsize,
}

/// What [`Admission::admit`] decided for a new connection.
pub enum Admitted {
    /// Serve it; [`Admission::release`] when it ends.
    Yes(Arc<Conn>),
    /// Nothing could be closed to make room yet: try again shortly ([`Admission::wait`]).
    Wait,
}

/// The address admission groups a client by: an IPv4 address (or an IPv4-mapped IPv6 one) whole,
/// an IPv6 address by its /64.
pub fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl Admission {
    /// `unauthenticated_timeout` bounds [`GRACE`] (a quarter of it at most).
    pub fn new(
        max_connections: usize,
        per_client: usize,
        unauthenticated_timeout: Duration,
    ) -> Admission {
        Admission {
            max_total: max_connections.max(1),
            max_unauthenticated: (max_connections - max_connections / 4).max(1),
            per_client: per_client.max(1),
            grace: GRACE.min(unauthenticated_timeout / 4),
            state: Mutex::default(),
            freed: Notify::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the counters are plain data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a new connection could be admitted: a slot is free, or an unauthenticated
    /// connection not running a request could be closed for it. Called before `accept`, so that
    /// past the limit new connections wait in the kernel's backlog.
    pub async fn room(&self) {
        loop {
            let freed = self.freed.notified();
            {
                let state = self.lock();
                let closable = state
                    .unauthenticated
                    .values()
                    .any(|c| c.stalled(self.grace))
                    || state.over_share(self.max_total, self.grace).is_some();
                if state.total < self.max_total || closable {
                    return;
                }
            }
            // Wake up now and then too: a connection becoming stalled frees nothing by itself.
            let _ = tokio::time::timeout(Duration::from_millis(25), freed).await;
        }
    }

    /// Admits a connection from `peer`, closing stalled unauthenticated ones to make room.
    pub fn admit(&self, peer: IpAddr) -> Admitted {
        let client = client_of(peer);
        let grace = self.grace;
        let mut state = self.lock();
        if state.per_client.get(&client).copied().unwrap_or(0) >= self.per_client
            && !state.evict_oldest(Some(client), grace)
        {
            return Admitted::Wait;
        }
        if state.unauthenticated.len() >= self.max_unauthenticated
            && !state.evict_oldest(None, grace)
        {
            return Admitted::Wait;
        }
        if state.total >= self.max_total
            && !state.evict_oldest(None, grace)
            && !state.evict_over_share(self.max_total, grace)
        {
            return Admitted::Wait;
        }
        state.next_id += 1;
        let conn = Arc::new(Conn {
            id: state.next_id,
            client,
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            waiting_ms: AtomicU64::new(0),
            phase_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            answering: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            authenticated: AtomicBool::new(false),
            account: std::sync::OnceLock::new(),
            evicted: Notify::new(),
            unwritten: Default::default(),
        });
        state.total += 1;
        state.unauthenticated.insert(conn.id, conn.clone());
        *state.per_client.entry(client).or_default() += 1;
        Admitted::Yes(conn)
    }

    /// Admits a connection that found no room ([`Admitted::Wait`]): tries again as room is made,
    /// for at most `within`. `None` when there was none in time, or when as many connections wait
    /// already as the server may hold (a flood of them is answered at once).
    pub async fn wait(&self, peer: IpAddr, within: Duration) -> Option<Arc<Conn>> {
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_total {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let deadline = tokio::time::Instant::now() + within;
        let admitted = loop {
            let freed = self.freed.notified();
            if let Admitted::Yes(conn) = self.admit(peer) {
                break Some(conn);
            }
            if tokio::time::Instant::now() >= deadline {
                break None;
            }
            let _ = tokio::time::timeout(Duration::from_millis(25), freed).await;
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        admitted
    }

    /// One of `conn`'s requests authenticated as `account`: from now on it counts in that
    /// account's share, and is closed to make room only when the account holds more than it.
    pub fn authenticated(&self, conn: &Arc<Conn>, account: &str) {
        if conn.is_authenticated() {
            return;
        }
        let mut state = self.lock();
        // A connection closed to make room meanwhile stays closed (its slot is given back).
        if state.forget(conn) {
            conn.authenticated.store(true, Ordering::Relaxed);
            let _ = conn.account.set(account.to_string());
            state.authenticated.insert(conn.id, conn.clone());
            *state.per_account.entry(account.to_string()).or_default() += 1;
        }
    }

    /// `conn` ended (its socket is closed): its slot is free.
    pub fn release(&self, conn: &Conn) {
        let mut state = self.lock();
        // An evicted connection gave its slot back when it was evicted.
        if state.forget(conn) || state.forget_authenticated(conn) {
            state.total = state.total.saturating_sub(1);
        }
        drop(state);
        self.freed.notify_waiters();
    }

    /// Unauthenticated connections of `peer`'s client address, for tests and logs.
    pub fn unauthenticated_from(&self, peer: IpAddr) -> usize {
        let client = client_of(peer);
        self.lock().per_client.get(&client).copied().unwrap_or(0)
    }

    /// (all connections, unauthenticated ones), for tests and logs.
    pub fn load(&self) -> (usize, usize) {
        let state = self.lock();
        (state.total, state.unauthenticated.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn yes(a: Admitted) -> Arc<Conn> {
        match a {
            Admitted::Yes(c) => c,
            Admitted::Wait => panic!("no room"),
        }
    }

    #[test]
    fn one_address_holds_its_share_and_its_newest_connection_wins() {
        let adm = Admission::new(100, 2, Duration::ZERO);
        let a1 = yes(adm.admit(ip("10.0.0.1")));
        let a2 = yes(adm.admit(ip("10.0.0.1")));
        let b1 = yes(adm.admit(ip("10.0.0.2")));
        // A third from 10.0.0.1 closes its oldest, never another address's.
        let a3 = yes(adm.admit(ip("10.0.0.1")));
        assert_eq!(adm.load(), (3, 3));
        assert!(a1.evicted.notified().now_or_never_ready());
        assert!(!a2.evicted.notified().now_or_never_ready());
        assert!(!b1.evicted.notified().now_or_never_ready());
        // Its release after the eviction gives nothing back twice.
        adm.release(&a1);
        assert_eq!(adm.load(), (3, 3));
        // An authenticated connection leaves the count of its address for good.
        adm.authenticated(&a2, "acc_a");
        let _a4 = yes(adm.admit(ip("10.0.0.1")));
        assert_eq!(adm.load(), (4, 3));
        assert!(!a3.evicted.notified().now_or_never_ready());
        adm.release(&a2);
        assert_eq!(adm.load(), (3, 3));
    }

    #[test]
    fn a_quarter_is_kept_for_authenticated_connections_and_running_requests_stay() {
        let adm = Admission::new(8, 100, Duration::ZERO);
        let conns: Vec<_> = (0..6)
            .map(|i| yes(adm.admit(ip(&format!("10.0.1.{i}")))))
            .collect();
        // Six unauthenticated of eight slots: the seventh closes the oldest.
        let _running = Running::enter(&conns[0]);
        let seventh = yes(adm.admit(ip("10.0.2.1")));
        assert!(!conns[0].evicted.notified().now_or_never_ready(), "running");
        assert!(conns[1].evicted.notified().now_or_never_ready());
        assert_eq!(adm.load(), (6, 6));
        // Authenticated connections fill the rest; then only running ones are left: refused.
        for c in &conns[2..] {
            adm.authenticated(c, "acc_a");
        }
        let all: Vec<_> = (0..2)
            .map(|i| yes(adm.admit(ip(&format!("10.0.3.{i}")))))
            .collect();
        assert_eq!(adm.load(), (8, 4));
        let _r1 = Running::enter(&all[0]);
        let _r2 = Running::enter(&all[1]);
        let _r3 = Running::enter(&seventh);
        assert!(matches!(adm.admit(ip("10.0.4.1")), Admitted::Wait));
    }

    #[test]
    fn an_account_holding_more_than_its_share_gives_its_stalled_connections_back() {
        let adm = Admission::new(8, 100, Duration::ZERO);
        // One account's keys hold every slot with connections that send nothing.
        let hog: Vec<_> = (0..8)
            .map(|i| {
                let c = yes(adm.admit(ip(&format!("10.0.5.{i}"))));
                adm.authenticated(&c, "acc_hog");
                c
            })
            .collect();
        assert_eq!(adm.load(), (8, 0));
        // Another client's connection closes the hog's oldest stalled one, not a running one.
        let _running = Running::enter(&hog[0]);
        let other = yes(adm.admit(ip("10.0.6.1")));
        assert!(!hog[0].evicted.notified().now_or_never_ready(), "running");
        assert!(hog[1].evicted.notified().now_or_never_ready());
        adm.authenticated(&other, "acc_other");
        // While it holds the most and more than its share (8 slots over two accounts and a
        // newcomer: 2), the hog's stalled connections go, oldest first; the other's stay.
        for i in 0..3 {
            let c = yes(adm.admit(ip(&format!("10.0.7.{i}"))));
            adm.authenticated(&c, "acc_other");
        }
        // (hog[1]'s notice was taken above.)
        for (i, c) in hog.iter().enumerate().filter(|(i, _)| *i != 1) {
            let evicted = c.evicted.notified().now_or_never_ready();
            assert_eq!(evicted, (2..5).contains(&i), "hog {i}");
        }
        assert!(!other.evicted.notified().now_or_never_ready());
        assert_eq!(adm.load(), (8, 0));
    }

    #[test]
    fn a_connection_that_just_came_is_never_closed_for_a_newer_one() {
        let adm = Admission::new(100, 1, Duration::from_secs(3));
        let first = yes(adm.admit(ip("10.0.0.1")));
        // Within the grace, the second from the address waits instead of closing the first.
        assert!(matches!(adm.admit(ip("10.0.0.1")), Admitted::Wait));
        assert!(!first.evicted.notified().now_or_never_ready());
        adm.authenticated(&first, "acc_a");
        let _second = yes(adm.admit(ip("10.0.0.1")));
    }

    #[test]
    fn ipv6_clients_are_grouped_by_their_64() {
        assert_eq!(client_of(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(client_of(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        assert_eq!(client_of(ip("127.0.0.1")), ip("127.0.0.1"));
    }

    /// `Notify` holds a permit after `notify_one` with no waiter: whether it has one.
    trait Ready {
        fn now_or_never_ready(self) -> bool;
    }
    impl<F: std::future::Future> Ready for F {
        fn now_or_never_ready(self) -> bool {
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            let mut f = std::pin::pin!(self);
            f.as_mut().poll(&mut cx).is_ready()
        }
    }
}

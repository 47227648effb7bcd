//! The HTTP sessions this server keeps, and when each one ends.
//!
//! rmcp keeps the MCP side of a session, and its server; this table keeps what rmcp does not
//! know: how many response streams the client holds open, when it was last heard from, and
//! the session's protocol era. Ending a session is closing it in rmcp, whose transport then
//! tells the session's server (`../ending.rs`).
//!
//! A session ends when the client deletes it, when it has been idle (no request and no open
//! stream) for the idle time, or soon after it abandoned a call: the response stream of an
//! unfinished call was dropped (the client went away) and nothing came back within the
//! grace. At the cap, a new session takes the place of the one idle longest, if any has no
//! request in flight and no open stream: health checks (`claude mcp list`, `gemini mcp
//! list`) open sessions and never end them, and must not lock real clients out. Below the
//! cap nothing is evicted. Time is passed in, so the rules are tested without a clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a client that dropped an unfinished call has to come back (resume the stream or
/// send anything) before its session ends. The server tells clients to retry a broken
/// stream after 3 s (the SSE `retry` field).
pub const ABANDON_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Idle,
    Abandoned,
}

struct Entry {
    streams: usize,
    /// Requests handed to rmcp and not yet answered (a call's stream counts in `streams`
    /// once its answer begins).
    requests: usize,
    last_seen: Instant,
    abandoned_at: Option<Instant>,
    /// Whether its streams open with a priming event (`priming.rs`): settled by its
    /// `initialize` result, not before.
    primed: bool,
}

struct State {
    entries: HashMap<String, Entry>,
    /// Sessions being created right now (an `initialize` in flight).
    reserved: usize,
}

pub struct Sessions {
    state: Mutex<State>,
    cap: usize,
}

/// A place for one new session, held while its `initialize` runs; dropped unused, it frees
/// the place again.
pub struct Reservation {
    sessions: Arc<Sessions>,
    used: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.used {
            self.sessions.lock().reserved -= 1;
        }
    }
}

impl Reservation {
    /// The `initialize` made session `id`.
    pub fn fulfil(mut self, id: String, now: Instant) {
        self.used = true;
        let mut state = self.sessions.lock();
        state.reserved -= 1;
        state.entries.insert(
            id,
            Entry {
                streams: 0,
                requests: 0,
                last_seen: now,
                abandoned_at: None,
                primed: false,
            },
        );
    }
}

/// One request of a session in rmcp's hands; see [`Sessions::request`].
pub struct InFlight {
    sessions: Arc<Sessions>,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.lock().entries.get_mut(&self.id) {
            entry.requests = entry.requests.saturating_sub(1);
        }
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few field writes; a panic elsewhere cannot leave it half done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn new(cap: usize) -> Arc<Sessions> {
        Arc::new(Sessions {
            state: Mutex::new(State {
                entries: HashMap::new(),
                reserved: 0,
            }),
            cap,
        })
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// A place for a new session, or `None` when the cap is reached and every session is
    /// busy. At the cap, the session idle longest is removed to make room and its id
    /// returned, to be ended.
    pub fn reserve(self: &Arc<Self>) -> Option<(Reservation, Option<String>)> {
        let mut state = self.lock();
        let mut evicted = None;
        if state.entries.len() + state.reserved >= self.cap {
            let id = state
                .entries
                .iter()
                .filter(|(_, e)| e.streams == 0 && e.requests == 0)
                .min_by_key(|(_, e)| e.last_seen)
                .map(|(id, _)| id.clone())?;
            state.entries.remove(&id)?;
            evicted = Some(id);
        }
        state.reserved += 1;
        let reservation = Reservation {
            sessions: self.clone(),
            used: false,
        };
        Some((reservation, evicted))
    }

    /// A request of session `id` is handed to rmcp; the session is busy until the returned
    /// guard is dropped. `None` if the session is not known.
    pub fn request(self: &Arc<Self>, id: &str, now: Instant) -> Option<InFlight> {
        let mut state = self.lock();
        let entry = state.entries.get_mut(id)?;
        entry.last_seen = now;
        entry.abandoned_at = None;
        entry.requests += 1;
        Some(InFlight {
            sessions: self.clone(),
            id: id.to_owned(),
        })
    }

    /// Session `id`'s `initialize` result said whether its streams get priming events.
    pub fn set_primed(&self, id: &str, primed: bool) {
        if let Some(entry) = self.lock().entries.get_mut(id) {
            entry.primed = primed;
        }
    }

    /// Whether session `id`'s streams get priming events; not for an unknown session.
    pub fn primed(&self, id: &str) -> bool {
        self.lock().entries.get(id).is_some_and(|e| e.primed)
    }

    pub fn stream_opened(&self, id: &str) {
        if let Some(entry) = self.lock().entries.get_mut(id) {
            entry.streams += 1;
        }
    }

    /// A response stream ended; `abandoned` when it was the stream of a call that had not
    /// finished (the client dropped it).
    pub fn stream_closed(&self, id: &str, abandoned: bool, now: Instant) {
        if let Some(entry) = self.lock().entries.get_mut(id) {
            entry.streams = entry.streams.saturating_sub(1);
            entry.last_seen = now;
            if abandoned {
                entry.abandoned_at = Some(now);
            }
        }
    }

    /// Whether session `id` was in the table.
    pub fn remove(&self, id: &str) -> bool {
        self.lock().entries.remove(id).is_some()
    }

    /// Removes and returns every session that has ended by `now`.
    pub fn take_ended(&self, now: Instant, idle: Duration) -> Vec<(String, Ending)> {
        let grace = ABANDON_GRACE.min(idle);
        let mut ended = Vec::new();
        self.lock().entries.retain(|id, entry| {
            if entry.streams > 0 || entry.requests > 0 {
                return true;
            }
            let ending = if entry
                .abandoned_at
                .is_some_and(|at| now.saturating_duration_since(at) >= grace)
            {
                Ending::Abandoned
            } else if now.saturating_duration_since(entry.last_seen) >= idle {
                Ending::Idle
            } else {
                return true;
            };
            ended.push((id.clone(), ending));
            false
        });
        ended
    }

    /// Removes every session and returns their ids (the server is stopping).
    pub fn take_all(&self) -> Vec<String> {
        self.lock().entries.drain().map(|(id, _)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn with_one(now: Instant) -> Arc<Sessions> {
        let sessions = Sessions::new(4);
        sessions.reserve().unwrap().0.fulfil("s1".into(), now);
        sessions
    }

    fn open(sessions: &Arc<Sessions>, id: &'static str, at: Instant) {
        let (reservation, evicted) = sessions.reserve().expect("a place");
        assert!(evicted.is_none(), "{evicted:?} evicted below the cap");
        reservation.fulfil(id.into(), at);
    }

    #[test]
    fn the_cap_counts_sessions_being_made() {
        let t0 = Instant::now();
        let sessions = Sessions::new(2);
        let (a, _) = sessions.reserve().unwrap();
        let (b, _) = sessions.reserve().unwrap();
        assert!(sessions.reserve().is_none());
        drop(b);
        a.fulfil("a".into(), t0);
        assert_eq!(sessions.len(), 1);
        let (c, _) = sessions.reserve().unwrap();
        // "a" is idle, so it would make room; a session still being made never does.
        let (d, evicted) = sessions.reserve().unwrap();
        assert_eq!(evicted.as_deref(), Some("a"));
        assert!(sessions.reserve().is_none());
        drop((c, d));
        assert!(sessions.reserve().is_some());
    }

    #[test]
    fn at_the_cap_the_session_idle_longest_makes_room_and_below_it_none_does() {
        let t0 = Instant::now();
        let sessions = Sessions::new(3);
        open(&sessions, "early", t0);
        open(&sessions, "middle", t0 + ms(10));
        // Below the cap, however long idle, nothing is evicted.
        open(&sessions, "late", t0 + IDLE * 10);
        assert_eq!(sessions.len(), 3);
        // "early" calls again much later: now "middle" is the one idle longest.
        drop(sessions.request("early", t0 + IDLE * 20));
        let (reservation, evicted) = sessions.reserve().unwrap();
        assert_eq!(evicted.as_deref(), Some("middle"));
        reservation.fulfil("new".into(), t0 + IDLE * 21);
        let (_, evicted) = sessions.reserve().unwrap();
        assert_eq!(evicted.as_deref(), Some("late"));
    }

    #[test]
    fn a_session_with_a_request_in_flight_or_an_open_stream_is_never_evicted() {
        let t0 = Instant::now();
        let sessions = Sessions::new(3);
        open(&sessions, "calling", t0);
        open(&sessions, "streaming", t0 + ms(1));
        open(&sessions, "idle", t0 + ms(2));
        let call = sessions.request("calling", t0).unwrap();
        sessions.stream_opened("streaming");
        let (reservation, evicted) = sessions.reserve().unwrap();
        assert_eq!(evicted.as_deref(), Some("idle"));
        reservation.fulfil("fresh".into(), t0 + ms(3));
        sessions.stream_opened("fresh");
        // Every session busy: no place, as before.
        assert!(sessions.reserve().is_none());
        // The call's answer came back: that session may make room again.
        drop(call);
        assert_eq!(sessions.reserve().unwrap().1.as_deref(), Some("calling"));
        assert!(sessions.request("gone", t0).is_none());
    }

    #[test]
    fn a_request_in_flight_keeps_a_session_from_expiring() {
        let t0 = Instant::now();
        let sessions = with_one(t0);
        let call = sessions.request("s1", t0).unwrap();
        assert!(sessions.take_ended(t0 + IDLE * 2, IDLE).is_empty());
        drop(call);
        assert_eq!(sessions.take_ended(t0 + IDLE * 2, IDLE).len(), 1);
    }

    #[test]
    fn a_session_ends_after_the_idle_time_without_requests_or_streams() {
        let t0 = Instant::now();
        let sessions = with_one(t0);
        assert!(sessions.take_ended(t0 + IDLE - ms(1), IDLE).is_empty());
        assert!(sessions.request("s1", t0 + ms(30_000)).is_some());
        assert!(sessions.take_ended(t0 + IDLE, IDLE).is_empty());
        let ended = sessions.take_ended(t0 + ms(30_000) + IDLE, IDLE);
        assert_eq!(ended, vec![("s1".to_owned(), Ending::Idle)]);
        assert_eq!(sessions.len(), 0);
        assert!(sessions.request("s1", t0).is_none());
    }

    #[test]
    fn an_open_stream_keeps_a_session_alive_however_long() {
        let t0 = Instant::now();
        let sessions = with_one(t0);
        sessions.stream_opened("s1");
        assert!(sessions.take_ended(t0 + IDLE * 100, IDLE).is_empty());
        sessions.stream_closed("s1", false, t0 + IDLE * 100);
        assert!(
            sessions
                .take_ended(t0 + IDLE * 101 - ms(1), IDLE)
                .is_empty()
        );
        assert_eq!(sessions.take_ended(t0 + IDLE * 101, IDLE).len(), 1);
    }

    #[test]
    fn a_dropped_call_ends_the_session_after_the_grace_unless_the_client_comes_back() {
        let t0 = Instant::now();
        let sessions = with_one(t0);
        sessions.stream_opened("s1");
        sessions.stream_closed("s1", true, t0);
        assert!(
            sessions
                .take_ended(t0 + ABANDON_GRACE - ms(1), IDLE)
                .is_empty()
        );
        assert_eq!(
            sessions.take_ended(t0 + ABANDON_GRACE, IDLE)[0].1,
            Ending::Abandoned
        );

        let sessions = with_one(t0);
        sessions.stream_opened("s1");
        sessions.stream_closed("s1", true, t0);
        drop(sessions.request("s1", t0 + ms(3_000)));
        assert!(sessions.take_ended(t0 + ABANDON_GRACE, IDLE).is_empty());

        // A client still holding another stream is alive: it may cancel the call itself.
        let sessions = with_one(t0);
        sessions.stream_opened("s1");
        sessions.stream_opened("s1");
        sessions.stream_closed("s1", true, t0);
        assert!(sessions.take_ended(t0 + ABANDON_GRACE, IDLE).is_empty());
    }

    #[test]
    fn the_grace_is_never_longer_than_the_idle_time() {
        let t0 = Instant::now();
        let sessions = with_one(t0);
        sessions.stream_opened("s1");
        sessions.stream_closed("s1", true, t0);
        let ended = sessions.take_ended(t0 + ms(500), ms(500));
        assert_eq!(ended.len(), 1);
    }
}

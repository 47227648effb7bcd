//! SSE priming events only for the protocol eras that expect them.
//!
//! rmcp opens every SSE stream with a priming event (SEP-1699: an event id and a `retry`
//! time over empty `data`), with which a client of 2025-11-25 or later resumes a broken
//! stream (`Last-Event-ID`). Clients of the earlier eras `JSON.parse` every event's data:
//! the TypeScript SDK 1.11 and 1.17 (and, as reported, 1.22) and Python `mcp` 1.10 report an
//! error for each stream, and Gemini CLI 0.61 then offers the model none of the server's
//! tools. rmcp's switch for it (`sse_retry`) holds for every session alike, so the gate
//! takes the priming events out of the streams of sessions older than 2025-11-25, which the
//! official TypeScript and Python SDK servers never send them either.
//!
//! A session's era is the `protocolVersion` its `initialize` result names. The response
//! that carries that result opens with a priming event itself, so there the event is held
//! until the result shows whether to send it.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use rmcp::model::ProtocolVersion;

type Body = BoxBody<Bytes, Infallible>;

/// The first protocol version whose clients expect priming events.
pub const FIRST_PRIMED: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Whether a session of protocol `version` gets priming events.
pub fn primes(version: &ProtocolVersion) -> bool {
    *version >= FIRST_PRIMED
}

/// Told, once, whether the session a response opened gets priming events.
pub type Settled = Box<dyn FnOnce(bool) + Send + Sync>;

/// What to do with the priming events of one response stream.
pub enum Rule {
    /// A session of 2025-11-25 or later: every event goes out.
    Keep,
    /// An older session: priming events are left out.
    Strip,
    /// The `initialize` response: a priming event waits for the result, which settles the
    /// session's era.
    Settle(Settled),
}

/// A response stream with priming events sent or left out by its session's era.
pub struct Primed {
    inner: Body,
    rule: Rule,
    /// A priming event held until the era is known.
    held: Option<Bytes>,
    /// The event that settled the era, due after the held priming event.
    next: Option<Bytes>,
}

impl Primed {
    pub fn new(inner: Body, rule: Rule) -> Primed {
        Primed {
            inner,
            rule,
            held: None,
            next: None,
        }
    }
}

/// The data of one SSE event (rmcp writes one event per frame): `None` for an event without
/// a `data` line (a keep-alive comment), `Some("")` for a priming event. The one reader of an
/// event's data, for the priming rule here and `carries_response` in http.rs.
pub(super) fn event_data(event: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(event).ok()?;
    let mut data: Option<String> = None;
    for line in text.lines() {
        let Some(value) = line.strip_prefix("data:") else {
            continue;
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut data {
            Some(joined) => {
                joined.push('\n');
                joined.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
    data
}

fn is_priming(event: &[u8]) -> bool {
    event_data(event).is_some_and(|data| data.is_empty())
}

/// The protocol version an `initialize` result names; `None` for any other message (an
/// error: no session was made).
fn negotiated(data: &str) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Message {
        result: Option<Result>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Result {
        protocol_version: Option<ProtocolVersion>,
    }
    serde_json::from_str::<Message>(data)
        .ok()?
        .result?
        .protocol_version
}

impl http_body::Body for Primed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(event) = this.next.take() {
            return Poll::Ready(Some(Ok(Frame::data(event))));
        }
        loop {
            // At the end a priming event still held goes unsent: no result came to ask
            // for it.
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                end => return Poll::Ready(end),
            };
            let Some(event) = frame.data_ref() else {
                return Poll::Ready(Some(Ok(frame)));
            };
            match &this.rule {
                Rule::Keep => return Poll::Ready(Some(Ok(frame))),
                Rule::Strip if is_priming(event) => continue,
                Rule::Strip => return Poll::Ready(Some(Ok(frame))),
                Rule::Settle(_) if is_priming(event) => {
                    this.held = Some(event.clone());
                    continue;
                }
                Rule::Settle(_) => {
                    let Some(data) = event_data(event) else {
                        // A keep-alive comment: no message yet.
                        return Poll::Ready(Some(Ok(frame)));
                    };
                    let primed = negotiated(&data).is_some_and(|v| primes(&v));
                    let rule = if primed { Rule::Keep } else { Rule::Strip };
                    if let Rule::Settle(settled) = std::mem::replace(&mut this.rule, rule) {
                        settled(primed);
                    }
                    if primed && let Some(priming) = this.held.take() {
                        this.next = Some(event.clone());
                        return Poll::Ready(Some(Ok(Frame::data(priming))));
                    }
                    this.held = None;
                    return Poll::Ready(Some(Ok(frame)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.next.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // Events may be left out, so only the upper bound of the inner body holds, and
        // only when nothing is waiting here.
        let mut hint = SizeHint::new();
        if self.next.is_none()
            && let Some(upper) = self.inner.size_hint().upper()
        {
            hint.set_upper(upper);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};
    use std::sync::{Arc, Mutex};

    const PRIMING: &[u8] = b"data: \nid: 0\nretry: 3000\n\n";
    const KEEP_ALIVE: &[u8] = b":\n\n";

    fn result(version: &str) -> Vec<u8> {
        format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"protocolVersion\":\"{version}\"}}}}\nid: 0/1\n\n"
        )
        .into_bytes()
    }

    fn body(events: &[&[u8]]) -> Body {
        let frames: Vec<Result<Frame<Bytes>, Infallible>> = events
            .iter()
            .map(|e| Ok(Frame::data(Bytes::copy_from_slice(e))))
            .collect();
        BoxBody::new(StreamBody::new(futures::stream::iter(frames)))
    }

    async fn events(body: Primed) -> Vec<Vec<u8>> {
        let mut body = body;
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("infallible").into_data() {
                out.push(data.to_vec());
            }
        }
        out
    }

    fn settle_into(slot: &Arc<Mutex<Option<bool>>>) -> Rule {
        let slot = slot.clone();
        Rule::Settle(Box::new(move |primed| {
            *slot.lock().expect("slot") = Some(primed);
        }))
    }

    #[test]
    fn only_2025_11_25_and_later_are_primed() {
        for old in ["2024-11-05", "2025-03-26", "2025-06-18"] {
            assert!(!primes(
                &serde_json::from_str(&format!("\"{old}\"")).expect("version")
            ));
        }
        for new in ["2025-11-25", "2026-07-28"] {
            assert!(primes(
                &serde_json::from_str(&format!("\"{new}\"")).expect("version")
            ));
        }
    }

    #[test]
    fn a_priming_event_is_one_with_empty_data() {
        assert!(is_priming(PRIMING));
        assert!(is_priming(b"data:\nretry: 3000\n\n"));
        assert!(!is_priming(KEEP_ALIVE));
        assert!(!is_priming(&result("2025-06-18")));
        assert!(!is_priming(b"\xff"));
    }

    #[tokio::test]
    async fn an_old_session_gets_its_initialize_result_without_the_priming_event() {
        let settled = Arc::new(Mutex::new(None));
        let out = events(Primed::new(
            body(&[PRIMING, &result("2025-06-18")]),
            settle_into(&settled),
        ))
        .await;
        assert_eq!(out, vec![result("2025-06-18")]);
        assert_eq!(*settled.lock().expect("slot"), Some(false));
    }

    #[tokio::test]
    async fn a_new_session_gets_the_priming_event_first_then_its_result() {
        let settled = Arc::new(Mutex::new(None));
        let out = events(Primed::new(
            body(&[PRIMING, &result("2025-11-25")]),
            settle_into(&settled),
        ))
        .await;
        assert_eq!(out, vec![PRIMING.to_vec(), result("2025-11-25")]);
        assert_eq!(*settled.lock().expect("slot"), Some(true));
    }

    #[tokio::test]
    async fn an_initialize_error_settles_as_unprimed() {
        let settled = Arc::new(Mutex::new(None));
        let error: &[u8] =
            b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32602,\"message\":\"x\"}}\n\n";
        let out = events(Primed::new(body(&[PRIMING, error]), settle_into(&settled))).await;
        assert_eq!(out, vec![error.to_vec()]);
        assert_eq!(*settled.lock().expect("slot"), Some(false));
    }

    #[tokio::test]
    async fn strip_leaves_out_every_priming_event_and_keeps_the_rest() {
        let message: &[u8] =
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
        let out = events(Primed::new(
            body(&[PRIMING, message, KEEP_ALIVE, PRIMING]),
            Rule::Strip,
        ))
        .await;
        assert_eq!(out, vec![message.to_vec(), KEEP_ALIVE.to_vec()]);
        let out = events(Primed::new(body(&[PRIMING, message]), Rule::Keep)).await;
        assert_eq!(out, vec![PRIMING.to_vec(), message.to_vec()]);
    }
}

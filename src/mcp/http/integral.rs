//! Whole numbers as integers in the forms of input requests, over HTTP.
//!
//! rmcp's Streamable HTTP service takes a `ServerHandler`, whose results are rmcp's typed
//! ones: a 2026-07-28 `input_required` result and a task's `tasks/get` carry its
//! `ElicitRequest`, which writes a whole bound or default as `1.0` (fast-agent shows "min
//! 1.0"; Python reads a float). On stdio `elicitation::IntegralNumbers` mends the result
//! before rmcp writes it; here the event rmcp wrote is mended, by the same rule
//! (`elicitation::integral_input_requests`).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use serde_json::Value;

use super::priming;
use crate::mcp::elicitation;

type Body = BoxBody<Bytes, Infallible>;

/// A response stream whose events carrying input requests have their forms mended.
pub struct IntegralEvents {
    inner: Body,
}

impl IntegralEvents {
    pub fn new(inner: Body) -> IntegralEvents {
        IntegralEvents { inner }
    }
}

/// The event again with its forms' whole numbers as integers; `None` for an event that
/// carries no input request (the most of them: only those naming `inputRequests` are read).
fn mended(event: &[u8]) -> Option<Bytes> {
    const KEY: &[u8] = b"\"inputRequests\"";
    if !event.windows(KEY.len()).any(|w| w == KEY) {
        return None;
    }
    let mut message: Value = serde_json::from_str(&priming::event_data(event)?).ok()?;
    if !elicitation::integral_input_requests(message.get_mut("result")?) {
        return None;
    }
    // rmcp writes one event per frame, its message on one `data` line; the other lines
    // (`id`, `retry`) stay as they are.
    let text = std::str::from_utf8(event).ok()?;
    let mut out = String::with_capacity(event.len());
    let mut data = Some(message.to_string());
    for line in text.split_inclusive('\n') {
        if !line.starts_with("data:") {
            out.push_str(line);
        } else if let Some(data) = data.take() {
            out.push_str("data: ");
            out.push_str(&data);
            out.push('\n');
        }
    }
    Some(Bytes::from(out))
}

impl http_body::Body for IntegralEvents {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            end => return Poll::Ready(end),
        };
        let event = frame.data_ref().and_then(|event| mended(event));
        Poll::Ready(Some(Ok(event.map_or(frame, Frame::data))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    // A mended event is longer than rmcp's: no size is known beforehand.
    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_event_with_input_requests_is_mended_and_its_other_lines_stay() {
        let event =
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"resultType\":\"input_required\",\
\"inputRequests\":{\"him\":{\"method\":\"elicitation/create\",\"params\":{\"requestedSchema\":\
{\"properties\":{\"n\":{\"type\":\"number\",\"minimum\":1.0,\"maximum\":2.5}}}}}}}}\nid: 0/2\n\n";
        let event = mended(event).unwrap();
        let text = std::str::from_utf8(&event).unwrap();
        assert!(text.ends_with("\nid: 0/2\n\n"), "{text}");
        assert!(text.contains("\"minimum\":1,"), "{text}");
        assert!(text.contains("\"maximum\":2.5"), "{text}");
        for other in [
            &b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"minimum\":1.0}}\n\n"[..],
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"text\":\"\\\"inputRequests\\\"\"}}\n\n",
            b"data: \nid: 0\nretry: 3000\n\n",
            b":ping\n\n",
            b"\"inputRequests\"\xff",
        ] {
            assert!(mended(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }
}

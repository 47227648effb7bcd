//! The stdio transport of `him serve`: rmcp's newline-delimited JSON-RPC, with two things
//! of our own.
//!
//! - A `tools/call` line is read straight into rmcp's types. rmcp reads every line
//!   through untagged and flattened enums, which buffer the whole message in serde's
//!   `Content` first; for the line every question starts with that was the largest part of
//!   `him serve`'s own work per question (BENCHMARKS.md). Any other line, and any
//!   `tools/call` line that is not plainly shaped (a key the envelope does not have, a
//!   duplicate, a wrong type, fields by position), goes through rmcp's own transport code,
//!   which also decides what to ignore and what to answer with an error. A property test
//!   checks the two readings agree.
//! - The end of input is reported at once. rmcp then gives calls in progress 5 s to finish
//!   before it stops them; ours wait for a person, so they are withdrawn instead: the
//!   panel clears, and each call ends as cancelled.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex as StdMutex};

use bytes::{Buf, BytesMut};
use futures::{FutureExt, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientJsonRpcMessage,
    ClientRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::codec::{Decoder, FramedRead};

pub struct StdioTransport<R, W> {
    lines: FramedRead<R, LineCodec>,
    write: Arc<Mutex<Option<W>>>,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R: AsyncRead, W> StdioTransport<R, W> {
    /// `on_eof` runs once, when the input ends or fails.
    pub fn new(read: R, write: W, on_eof: Box<dyn FnOnce() + Send>) -> Self {
        StdioTransport {
            lines: FramedRead::new(read, LineCodec::default()),
            write: Arc::new(Mutex::new(Some(write))),
            on_eof: Some(on_eof),
        }
    }
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match self.lines.next().await? {
                Ok(Line::Text(line)) => line,
                Ok(Line::TooLong) => {
                    tracing::error!(
                        max_line_length = DEFAULT_MAX_LINE_LENGTH,
                        "Incoming message exceeded the maximum line length, discarding it"
                    );
                    continue;
                }
                Err(err) => {
                    tracing::error!("Error reading from stream: {err}");
                    return None;
                }
            };
            if let Some(message) = read_call(&line) {
                return Some(message);
            }
            // rmcp drops this future whenever another event comes first, so nothing after
            // the line is taken may wait: rmcp's reading of it completes at once (its input
            // is in memory), and its reply goes out from a task of its own.
            let Some((message, replies)) =
                tokio::task::unconstrained(rmcp_reading(&line)).now_or_never()
            else {
                tracing::error!(
                    "rmcp's reading of an incoming line did not complete; line dropped"
                );
                continue;
            };
            if !replies.is_empty() {
                let write = self.write.clone();
                tokio::spawn(async move {
                    if let Err(err) = write_raw(&write, &replies).await {
                        tracing::debug!("reply to a line that is no message not sent: {err}");
                    }
                });
            }
            if message.is_some() {
                return message;
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        // Encoded now, as rmcp's codec would encode it; written in the order sends are
        // awaited, as rmcp's are, under one lock.
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move { write_raw(&write, &line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.next_message().await;
        if message.is_none()
            && let Some(on_eof) = self.on_eof.take()
        {
            on_eof();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

async fn write_raw<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    bytes: &[u8],
) -> io::Result<()> {
    let mut write = write.lock().await;
    let Some(write) = write.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "Transport is closed",
        ));
    };
    write.write_all(bytes).await?;
    write.flush().await
}

/// A `tools/call` request exactly as rmcp reads it, if the line is plainly one.
fn read_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    /// The envelope with nothing else in it: any other key sends the line to rmcp.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CallLine {
        #[allow(dead_code)]
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        #[allow(dead_code)]
        method: CallToolRequestMethod,
        params: FromObject<CallToolRequestParams>,
    }
    let FromObject(CallLine {
        id,
        params: FromObject(mut params),
        ..
    }) = serde_json::from_slice(line).ok()?;
    // rmcp keeps a request's `_meta` beside its params, in the request's extensions.
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(ClientJsonRpcMessage::request(
        ClientRequest::CallToolRequest(request),
        id,
    ))
}

/// `T` read only from a JSON object. serde's derived structs also take an array, fields by
/// position; rmcp reads the envelope and `params` through flattening, which takes objects
/// only, so an array must go to rmcp to be refused.
struct FromObject<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FromObject<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
            type Value = T;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }

        deserializer
            .deserialize_map(Object(std::marker::PhantomData))
            .map(FromObject)
    }
}

/// rmcp's own reading of one line: the message, if the line is one, and what rmcp wrote
/// back (an Invalid Request error for well-formed JSON that is no message).
async fn rmcp_reading(line: &[u8]) -> (Option<RxJsonRpcMessage<RoleServer>>, Vec<u8>) {
    let mut input = Vec::with_capacity(line.len() + 1);
    input.extend_from_slice(line);
    input.push(b'\n');
    let replies = Captured::default();
    let mut rmcp =
        AsyncRwTransport::<RoleServer, _, _>::new_server(io::Cursor::new(input), replies.clone());
    // It reads the line, then finds the end of its input: one message or none.
    let message = rmcp.receive().await;
    (message, replies.take())
}

/// A writer that keeps what is written, for the caller to pass on.
#[derive(Clone, Default)]
struct Captured(Arc<StdMutex<Vec<u8>>>);

impl Captured {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl AsyncWrite for Captured {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// One input line, as rmcp cuts them: without its `\n` or a `\r` before it; empty lines
/// are skipped; a line longer than rmcp's limit is dropped whole.
#[derive(Debug, PartialEq)]
enum Line {
    Text(BytesMut),
    TooLong,
}

#[derive(Default)]
struct LineCodec {
    /// Where the search for `\n` goes on from.
    searched: usize,
    /// Inside a line already reported as too long.
    discarding: bool,
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, io::Error> {
        loop {
            let newline = buf[self.searched..].iter().position(|&b| b == b'\n');
            let Some(at) = newline.map(|n| self.searched + n) else {
                if self.discarding {
                    buf.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                self.searched = buf.len();
                if buf.len() > DEFAULT_MAX_LINE_LENGTH {
                    buf.clear();
                    self.searched = 0;
                    self.discarding = true;
                    return Ok(Some(Line::TooLong));
                }
                return Ok(None);
            };
            self.searched = 0;
            let mut line = buf.split_to(at + 1);
            if std::mem::take(&mut self.discarding) {
                continue;
            }
            // rmcp counts the `\n` in a line's length.
            if line.len() > DEFAULT_MAX_LINE_LENGTH {
                return Ok(Some(Line::TooLong));
            }
            line.truncate(at);
            if line.last() == Some(&b'\r') {
                line.truncate(at - 1);
            }
            if !line.is_empty() {
                return Ok(Some(Line::Text(line)));
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, io::Error> {
        let line = self.decode(buf)?;
        // Bytes after the last `\n` are an unfinished message: nothing to deliver.
        if line.is_none() {
            buf.advance(buf.len());
            self.searched = 0;
        }
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn rmcp_parse(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        serde_json::from_slice(line).ok()
    }

    /// Both readings of a line as JSON, `_meta` included (rmcp writes a request's
    /// extensions' metadata back into its params).
    fn as_json(message: &RxJsonRpcMessage<RoleServer>) -> Value {
        serde_json::to_value(message).expect("serialisable")
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "[ -~\\u{e9}\\u{1F600}\"\\\\\n]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[a-z_]{1,6}", inner), 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    fn call_line() -> impl Strategy<Value = Value> {
        let id = prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z0-9-]{0,10}".prop_map(Value::from)
        ];
        let meta = prop::option::of((
            prop::option::of(prop_oneof![
                any::<u32>().prop_map(Value::from),
                "[a-z]{1,6}".prop_map(Value::from)
            ]),
            prop::collection::vec(("[a-zA-Z/._]{1,12}", json_value()), 0..3),
        ));
        let arguments =
            prop::option::of(prop::collection::vec(("[a-z_]{1,10}", json_value()), 0..5));
        let state = prop::option::of("[A-Za-z0-9+/=]{0,20}");
        (id, "[a-z_]{1,16}", meta, arguments, state).prop_map(
            |(id, name, meta, arguments, state)| {
                let mut params = json!({"name": name});
                if let Some((token, extra)) = meta {
                    let mut meta: serde_json::Map<String, Value> = extra.into_iter().collect();
                    if let Some(token) = token {
                        meta.insert("progressToken".into(), token);
                    }
                    params["_meta"] = Value::Object(meta);
                }
                if let Some(arguments) = arguments {
                    params["arguments"] = Value::Object(arguments.into_iter().collect());
                }
                if let Some(state) = state {
                    params["requestState"] = Value::from(state);
                }
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
            },
        )
    }

    proptest! {
        #[test]
        fn a_call_line_reads_as_rmcp_reads_it(line in call_line()) {
            let bytes = serde_json::to_vec(&line).expect("line");
            let ours = read_call(&bytes);
            prop_assert!(ours.is_some(), "a plain call line was not taken: {}", line);
            let rmcp = rmcp_parse(&bytes);
            prop_assert!(rmcp.is_some(), "rmcp refuses a line we take: {}", line);
            if let (Some(ours), Some(rmcp)) = (ours, rmcp) {
                prop_assert_eq!(as_json(&ours), as_json(&rmcp));
            }
        }
    }

    #[test]
    fn a_plain_call_line_takes_the_fast_path_with_its_meta_kept() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"ask_text","arguments":{"question":"Hi?"}}}"#;
        let ours = read_call(line).expect("taken");
        let rmcp = rmcp_parse(line).expect("rmcp reads it");
        assert_eq!(as_json(&ours), as_json(&rmcp));
        assert_eq!(as_json(&ours)["params"]["_meta"]["progressToken"], "p1");
    }

    #[test]
    fn lines_that_are_not_plain_calls_are_left_to_rmcp() {
        for line in [
            // Another method.
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#[..],
            // A key the envelope does not have.
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            // A key twice.
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            // Not 2.0; no id (a notification); an id of the wrong type.
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"x"}}"#,
            // Fields by position, which rmcp's reading of the envelope and of `params`
            // does not take.
            br#"["2.0",1,"tools/call",{"name":"x"}]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"x",{},null,null]}"#,
            // A byte-order mark, which rmcp strips.
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
            b"not json",
        ] {
            assert!(read_call(line).is_none(), "{}", String::from_utf8_lossy(line));
        }
    }

    fn lines(input: &[u8]) -> Vec<Line> {
        let mut codec = LineCodec::default();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(line) = codec.decode_eof(&mut buf).expect("decode") {
            out.push(line);
        }
        out
    }

    #[test]
    fn fields_by_position_are_refused_by_rmcp_too() {
        for line in [
            &br#"["2.0",1,"tools/call",{"name":"x"}]"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"x",{},null,null]}"#,
        ] {
            assert!(read_call(line).is_none());
            assert!(
                rmcp_parse(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn lines_are_cut_as_rmcp_cuts_them() {
        assert_eq!(
            lines(b"a\r\n\n\r\nb\nunfinished"),
            vec![Line::Text("a".into()), Line::Text("b".into())]
        );
        let long = vec![b'x'; DEFAULT_MAX_LINE_LENGTH + 1];
        let mut input = long.clone();
        input.extend_from_slice(b"\nnext\n");
        assert_eq!(
            lines(&input),
            vec![Line::TooLong, Line::Text("next".into())]
        );
    }

    #[test]
    fn a_long_line_arriving_in_pieces_is_dropped_once_and_the_next_is_kept() {
        let mut codec = LineCodec::default();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&vec![b'x'; DEFAULT_MAX_LINE_LENGTH]);
        assert_eq!(codec.decode(&mut buf).expect("decode"), None);
        buf.extend_from_slice(b"xx");
        assert_eq!(codec.decode(&mut buf).expect("decode"), Some(Line::TooLong));
        buf.extend_from_slice(b"still the long line");
        assert_eq!(codec.decode(&mut buf).expect("decode"), None);
        buf.extend_from_slice(b"\nnext\n");
        assert_eq!(
            codec.decode(&mut buf).expect("decode"),
            Some(Line::Text("next".into()))
        );
    }

    #[tokio::test]
    async fn rmcp_answers_json_that_is_no_message_and_ignores_what_is_not_json() {
        let (message, replies) = rmcp_reading(br#"{"hello":"there"}"#).await;
        assert!(message.is_none());
        let reply: Value = serde_json::from_slice(&replies).expect("one JSON reply");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let (message, replies) = rmcp_reading(b"not json").await;
        assert!(message.is_none() && replies.is_empty());
        let (message, replies) = rmcp_reading(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
        assert!(message.is_some() && replies.is_empty());
    }
}

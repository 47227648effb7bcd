//! Length-prefixed JSON framing, the same on every link (DESIGN.md §2): a `u32` byte length
//! in native byte order, then that many bytes of UTF-8 JSON.
//!
//! This layer knows bytes only. Whether the bytes are JSON of a known message is the
//! protocol's business (`wire/protocol.rs`), so a bad message costs one `error` reply while a
//! bad frame (a length over the cap, EOF inside a frame) closes its link.

use std::io::{self, Read, Write};

use byteorder::{ByteOrder, NativeEndian, ReadBytesExt, WriteBytesExt};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

/// Size of the length header (Chrome's native messaging uses a 32-bit length).
pub const HEADER_LEN: usize = 4;
/// Host → browser frames: Chrome and Firefox close the port on a message over 1 MiB
/// (developer.chrome.com/docs/extensions/develop/concepts/native-messaging).
pub const MAX_TO_BROWSER: usize = 1024 * 1024;
/// Browser → host and local-socket frames. Chrome allows 64 MiB towards the host; no question
/// or answer needs more than this, and a peer that claims more is not speaking our protocol.
pub const MAX_INBOUND: usize = 4 * 1024 * 1024;

#[derive(Debug)]
pub enum FrameError {
    /// The peer announced a frame longer than this link allows. The link must close: the
    /// rest of the stream cannot be re-synchronised.
    TooLong {
        len: usize,
        max: usize,
    },
    /// The stream ended inside a frame.
    Truncated {
        have: usize,
    },
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLong { len, max } => {
                write!(
                    f,
                    "frame of {len} bytes is over this link's limit of {max} bytes"
                )
            }
            FrameError::Truncated { have } => {
                write!(
                    f,
                    "stream ended inside a frame ({have} bytes of it received)"
                )
            }
            FrameError::Io(err) => write!(f, "i/o error: {err}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl From<io::Error> for FrameError {
    fn from(err: io::Error) -> Self {
        FrameError::Io(err)
    }
}

/// Reads and writes frames of at most `max` bytes of payload.
#[derive(Debug)]
pub struct FrameCodec {
    inner: LengthDelimitedCodec,
    max: usize,
}

impl FrameCodec {
    pub fn new(max: usize) -> Self {
        let inner = LengthDelimitedCodec::builder()
            .native_endian()
            .length_field_length(HEADER_LEN)
            .max_frame_length(max)
            .new_codec();
        FrameCodec { inner, max }
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        // Check the announced length ourselves, before anything is reserved for it, so the
        // error can say what the peer claimed. The inner codec is only handed whole frames,
        // so it never carries a half-read header between calls and the check stays valid.
        if src.len() < HEADER_LEN {
            return Ok(None);
        }
        let len = NativeEndian::read_u32(&src[..HEADER_LEN]) as usize;
        if len > self.max {
            return Err(FrameError::TooLong { len, max: self.max });
        }
        if src.len() < HEADER_LEN + len {
            src.reserve(HEADER_LEN + len - src.len());
            return Ok(None);
        }
        self.inner
            .decode(src)
            .map(|f| f.map(BytesMut::freeze))
            .map_err(FrameError::Io)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(FrameError::Truncated { have: src.len() }),
        }
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        if item.len() > self.max {
            return Err(FrameError::TooLong {
                len: item.len(),
                max: self.max,
            });
        }
        self.inner.encode(item, dst).map_err(FrameError::Io)
    }
}

/// Writes one frame to a blocking writer (for tools and tests that speak the protocol
/// without a runtime).
pub fn write_frame_sync(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB"))?;
    w.write_u32::<NativeEndian>(len)?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame from a blocking reader; `Ok(None)` on a clean EOF between frames.
pub fn read_frame_sync(r: &mut impl Read, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
    let len = match r.read_u32::<NativeEndian>() {
        Ok(len) => len as usize,
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    if len > max {
        return Err(FrameError::TooLong { len, max });
    }
    let mut buf = vec![0; len];
    r.read_exact(&mut buf).map_err(|err| match err.kind() {
        io::ErrorKind::UnexpectedEof => FrameError::Truncated { have: 0 },
        _ => err.into(),
    })?;
    Ok(Some(buf))
}

/// Writes one frame to an async writer, as [`write_frame_sync`] does.
pub async fn write_frame(w: &mut (impl AsyncWrite + Unpin), payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB"))?;
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&len.to_ne_bytes());
    frame.extend_from_slice(payload);
    w.write_all(&frame).await?;
    w.flush().await
}

/// Reads one frame from an async reader, as [`read_frame_sync`] does: exactly its bytes and
/// no more, so that the stream can be handed on to a [`FrameCodec`] afterwards (a handshake
/// read this way loses nothing that came behind it).
pub async fn read_frame(
    r: &mut (impl AsyncRead + Unpin),
    max: usize,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    match r.read_exact(&mut header).await {
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err.into()),
    }
    let len = NativeEndian::read_u32(&header) as usize;
    if len > max {
        return Err(FrameError::TooLong { len, max });
    }
    let mut buf = vec![0; len];
    r.read_exact(&mut buf)
        .await
        .map_err(|err| match err.kind() {
            io::ErrorKind::UnexpectedEof => FrameError::Truncated { have: 0 },
            _ => err.into(),
        })?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payload: &[u8]) -> BytesMut {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(payload.len() as u32).to_ne_bytes());
        buf.extend_from_slice(payload);
        buf
    }

    #[test]
    fn a_frame_round_trips_through_encode_and_decode() {
        let mut codec = FrameCodec::new(64);
        let mut buf = BytesMut::new();
        codec
            .encode(Bytes::from_static(b"{\"type\":\"x\"}"), &mut buf)
            .unwrap();
        assert_eq!(&buf[..4], &12u32.to_ne_bytes());
        let frame = codec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&frame[..], b"{\"type\":\"x\"}");
        assert!(buf.is_empty());
    }

    #[test]
    fn a_partial_frame_waits_for_more_bytes() {
        let mut codec = FrameCodec::new(64);
        let whole = framed(b"{\"a\":1}");
        let mut buf = BytesMut::from(&whole[..6]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&whole[6..]);
        assert_eq!(&codec.decode(&mut buf).unwrap().unwrap()[..], b"{\"a\":1}");
    }

    #[test]
    fn a_length_over_the_cap_is_refused_before_the_body_arrives() {
        let mut codec = FrameCodec::new(16);
        let mut buf = BytesMut::from(&17u32.to_ne_bytes()[..]);
        match codec.decode(&mut buf) {
            Err(FrameError::TooLong { len: 17, max: 16 }) => {}
            other => panic!("expected TooLong, got {other:?}"),
        }
    }

    #[test]
    fn eof_inside_a_frame_is_truncation_and_eof_between_frames_is_clean() {
        let mut codec = FrameCodec::new(64);
        let whole = framed(b"{}");
        let mut buf = BytesMut::from(&whole[..5]);
        assert!(matches!(
            codec.decode_eof(&mut buf),
            Err(FrameError::Truncated { have: 5 })
        ));
        let mut empty = BytesMut::new();
        assert!(codec.decode_eof(&mut empty).unwrap().is_none());
    }

    #[test]
    fn the_encoder_refuses_a_frame_over_the_cap() {
        let mut codec = FrameCodec::new(MAX_TO_BROWSER);
        let big = Bytes::from(vec![b' '; MAX_TO_BROWSER + 1]);
        assert!(matches!(
            codec.encode(big, &mut BytesMut::new()),
            Err(FrameError::TooLong { .. })
        ));
    }

    #[test]
    fn the_sync_reader_and_writer_agree_with_the_codec() {
        let mut wire = Vec::new();
        write_frame_sync(&mut wire, b"{\"type\":\"hello\"}").unwrap();
        let mut codec = FrameCodec::new(64);
        let mut buf = BytesMut::from(&wire[..]);
        assert_eq!(
            &codec.decode(&mut buf).unwrap().unwrap()[..],
            b"{\"type\":\"hello\"}"
        );
        let mut reader = &wire[..];
        assert_eq!(
            read_frame_sync(&mut reader, 64).unwrap().unwrap(),
            b"{\"type\":\"hello\"}"
        );
        assert!(read_frame_sync(&mut reader, 64).unwrap().is_none());
        let mut short = &wire[..7];
        assert!(matches!(
            read_frame_sync(&mut short, 64),
            Err(FrameError::Truncated { .. })
        ));
    }
}

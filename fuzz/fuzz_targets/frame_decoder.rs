//! The frame decoder on any bytes, fed in any chunks: it never panics, never yields a frame
//! over its cap, and consumes exactly the bytes of the frames it yields.
#![no_main]

use bytes::BytesMut;
use him::wire::frame::{FrameCodec, HEADER_LEN, read_frame_sync};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((&chunk, wire)) = rest.split_first() else {
        return;
    };
    // Small caps reach the over-the-cap path often; the real ones are checked too.
    let max = match selector % 4 {
        0 => usize::from(selector),
        1 => 1024,
        2 => him::wire::frame::MAX_TO_BROWSER,
        _ => him::wire::frame::MAX_INBOUND,
    };
    let chunk = usize::from(chunk).max(1);
    let mut codec = FrameCodec::new(max);
    let mut buf = BytesMut::new();
    let mut consumed = 0;
    let mut failed = false;
    'feed: for piece in wire.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(frame.len() <= max);
                    assert_eq!(
                        &wire[consumed + HEADER_LEN..consumed + HEADER_LEN + frame.len()],
                        &frame[..]
                    );
                    consumed += HEADER_LEN + frame.len();
                }
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    if !failed {
        let _ = codec.decode_eof(&mut buf);
    }
    // The blocking reader never panics either.
    let mut reader = wire;
    while let Ok(Some(frame)) = read_frame_sync(&mut reader, max) {
        assert!(frame.len() <= max);
    }
});

//! Protocol frame decoding on arbitrary lines, both directions: decoding never panics, and
//! a decoded frame encodes to one line that decodes to an equal frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zot_ext::testing::protocol::{self, Decoded, Frame, FromExt, FromHost};

fn round_trip<F: Frame + PartialEq + std::fmt::Debug>(line: &str) {
    let Ok((_, Decoded::Frame(frame))) = protocol::decode::<F>(line) else {
        return;
    };
    let encoded = protocol::encode(&frame);
    let body = encoded
        .strip_suffix('\n')
        .expect("a frame ends with a newline");
    assert!(!body.contains('\n'), "a frame is one line: {encoded:?}");
    match protocol::decode::<F>(body) {
        Ok((_, Decoded::Frame(again))) => assert_eq!(again, frame, "{encoded:?}"),
        other => panic!("{frame:?} encoded as {encoded:?}, which decodes as {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    round_trip::<FromExt>(line);
    round_trip::<FromHost>(line);
});

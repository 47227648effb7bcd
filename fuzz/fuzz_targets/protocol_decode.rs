//! Every message decoder on any bytes: never panics, and whatever decodes encodes and
//! decodes again.
#![no_main]

use him::wire::protocol::{
    self, AgentToHost, ExtensionToHost, HostToAgent, HostToExtension, Message,
};
use libfuzzer_sys::fuzz_target;

fn check<M: Message + std::fmt::Debug>(data: &[u8]) {
    if let Ok(message) = protocol::decode::<M>(data) {
        let again = protocol::decode::<M>(&protocol::encode(&message));
        assert!(
            again.is_ok(),
            "{message:?} does not decode after encoding: {again:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    check::<AgentToHost>(data);
    check::<HostToAgent>(data);
    check::<HostToExtension>(data);
    check::<ExtensionToHost>(data);
    let _ = protocol::ProtocolError::id_in(data);
});

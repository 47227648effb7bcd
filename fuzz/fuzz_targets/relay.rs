//! The host's state machine under any sequence of agents connecting, sending any frames,
//! closing, and the extension sending any frames: never panics, and every answer it relays
//! goes to the one agent that owns the question.
#![no_main]

use him::host::relay::{Effect, Relay};
use him::wire::protocol::{HostInfo, HostToAgent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut relay = Relay::new(HostInfo {
        version: "0".into(),
        pid: Some(1),
    });
    // Events are separated by 0xff; the first byte of each picks what happens and to whom.
    for event in data.split(|&b| b == 0xff) {
        let Some((&op, body)) = event.split_first() else {
            continue;
        };
        let agent = u64::from(op >> 2);
        let effects = match op & 3 {
            0 => {
                relay.agent_connected(agent);
                Vec::new()
            }
            1 => relay.agent_frame(agent, body),
            2 => relay.agent_closed(agent),
            _ => relay.extension_frame(body),
        };
        for effect in effects {
            if let Effect::ToAgent(to, HostToAgent::Answer(_)) = effect {
                assert!(op & 3 == 3, "an answer relayed on agent {to}'s own frame");
            }
        }
    }
    let _ = relay.pending();
});

//! Form validation on any JSON that parses as a form: never panics; a form that validates
//! survives a trip through JSON and still validates.
#![no_main]

use him::form::Form;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(form) = serde_json::from_slice::<Form>(data) else {
        return;
    };
    if form.validate().is_ok() {
        let json = serde_json::to_vec(&form).expect("a form serialises");
        let again: Form = serde_json::from_slice(&json).expect("a form parses back");
        assert!(again.validate().is_ok(), "{form:?}");
    }
});

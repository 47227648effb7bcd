//! Answer checking on any form and any values (the input is `form JSON \0 values JSON`):
//! never panics; on a valid form, an accepted answer names every field, and accepting it
//! again changes nothing.
#![no_main]

use him::form::Form;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |&b| b == 0);
    let (Some(form), Some(values)) = (parts.next(), parts.next()) else {
        return;
    };
    let Ok(form) = serde_json::from_slice::<Form>(form) else {
        return;
    };
    let Ok(values) = serde_json::from_slice::<Map<String, Value>>(values) else {
        return;
    };
    let checked = form.check_answer(&values);
    if form.validate().is_err() {
        return;
    }
    if let Ok(normalised) = checked {
        assert_eq!(normalised.len(), form.fields.len());
        let again = form.check_answer(&normalised);
        assert_eq!(again.as_ref(), Ok(&normalised), "{form:?} {values:?}");
    }
});

//! Properties of the pure layers, over generated input (bounded cases, so they run in every
//! `cargo test`; the cargo-fuzz targets in `fuzz/` search the same functions without bound):
//! the frame codec never panics, round-trips, decodes a stream the same however it is
//! split, and refuses every length over its cap; protocol decoding never panics and
//! round-trips every message; form validation and answer checking never panic, and
//! `check_answer` accepts exactly the answers that fit the form, judged by an independent
//! model of DESIGN.md §4.

use bytes::{Bytes, BytesMut};
use him::form::{Choice, Field, FieldType, Form, looks_like_email, looks_like_url};
use him::wire::frame::{FrameCodec, FrameError, HEADER_LEN, read_frame_sync};
use him::wire::protocol::{
    self, Action, AgentInfo, AgentToHost, Answer, Ask, ExtensionInfo, ExtensionToHost, HostInfo,
    HostToAgent, HostToExtension, LabelledAsk, Refusal, Welcome, WithdrawReason,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tokio_util::codec::{Decoder, Encoder};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Frames

fn framed(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut wire = Vec::new();
    for p in payloads {
        wire.extend_from_slice(&(p.len() as u32).to_ne_bytes());
        wire.extend_from_slice(p);
    }
    wire
}

/// Feeds `wire` to a fresh codec in chunks cut at `cuts`, then EOF; returns the frames
/// decoded and how it ended.
fn decode_in_chunks(max: usize, wire: &[u8], cuts: &[usize]) -> (Vec<Vec<u8>>, Result<(), String>) {
    let mut codec = FrameCodec::new(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    points.push(wire.len());
    points.sort_unstable();
    let mut at = 0;
    for point in points {
        buf.extend_from_slice(&wire[at..point]);
        at = point;
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame.to_vec()),
                Ok(None) => break,
                Err(err) => return (frames, Err(err.to_string())),
            }
        }
    }
    match codec.decode_eof(&mut buf) {
        Ok(None) => (frames, Ok(())),
        Ok(Some(frame)) => {
            frames.push(frame.to_vec());
            (frames, Err("a frame appeared only at EOF".into()))
        }
        Err(err) => (frames, Err(err.to_string())),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_decoder_never_panics_on_any_bytes_in_any_chunks(
        max in 0usize..300,
        wire in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let _ = decode_in_chunks(max, &wire, &cuts);
    }

    #[test]
    fn frames_round_trip_however_the_stream_is_split(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
    ) {
        let mut codec = FrameCodec::new(256);
        let mut encoded = BytesMut::new();
        for p in &payloads {
            codec.encode(Bytes::from(p.clone()), &mut encoded).unwrap();
        }
        prop_assert_eq!(&encoded[..], &framed(&payloads)[..]);
        let (frames, end) = decode_in_chunks(256, &encoded, &cuts);
        prop_assert_eq!(end, Ok(()));
        prop_assert_eq!(&frames, &payloads);
        // The blocking reader agrees with the codec.
        let mut reader = &encoded[..];
        let mut sync = Vec::new();
        while let Some(frame) = read_frame_sync(&mut reader, 256).unwrap() {
            sync.push(frame);
        }
        prop_assert_eq!(&sync, &payloads);
    }

    #[test]
    fn every_split_point_of_one_frame_decodes_the_same(
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let wire = framed(std::slice::from_ref(&payload));
        for split in 0..=wire.len() {
            let (frames, end) = decode_in_chunks(64, &wire, &[split]);
            prop_assert_eq!(end, Ok(()));
            prop_assert_eq!(&frames, &vec![payload.clone()]);
        }
    }

    #[test]
    fn a_length_over_the_cap_is_always_refused_and_ends_the_stream(
        max in 0usize..4096,
        over in 1u64..=u32::MAX as u64,
        before in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..32), 0..3),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let len = (max as u64 + over).min(u32::MAX as u64) as u32;
        prop_assume!(len as usize > max);
        let before: Vec<Vec<u8>> = before.into_iter().filter(|p| p.len() <= max).collect();
        let mut wire = framed(&before);
        wire.extend_from_slice(&len.to_ne_bytes());
        wire.extend_from_slice(&body);
        let mut codec = FrameCodec::new(max);
        let mut buf = BytesMut::from(&wire[..]);
        for expected in &before {
            prop_assert_eq!(&codec.decode(&mut buf).unwrap().unwrap()[..], &expected[..]);
        }
        let refused = matches!(codec.decode(&mut buf), Err(FrameError::TooLong { len: l, max: m }) if l == len as usize && m == max);
        prop_assert!(refused);
        // The blocking reader refuses it too, before reading the body.
        let mut reader = &wire[framed(&before).len()..];
        let refused = matches!(read_frame_sync(&mut reader, max), Err(FrameError::TooLong { .. }));
        prop_assert!(refused);
        // And nothing over the cap can be encoded.
        let big = Bytes::from(vec![0u8; max + 1]);
        let refused = matches!(codec.encode(big, &mut BytesMut::new()), Err(FrameError::TooLong { .. }));
        prop_assert!(refused);
        prop_assert_eq!(HEADER_LEN, 4);
    }
}

// ---------------------------------------------------------------------------------------
// Protocol

/// JSON values without floats (serde_json's float printing is not an exact round trip, and
/// no message field is a float).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn text() -> impl Strategy<Value = String> {
    ".{0,16}"
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

fn agent_info() -> impl Strategy<Value = AgentInfo> {
    (text(), opt_text(), opt_text(), opt_text()).prop_map(|(name, title, version, via)| AgentInfo {
        name,
        title,
        version,
        via,
    })
}

fn ask() -> impl Strategy<Value = Ask> {
    (text(), json_value(), any::<u64>(), any::<u64>(), opt_text()).prop_map(
        |(id, form, timeout_ms, asked_at_ms, project)| Ask {
            id,
            form,
            timeout_ms,
            asked_at_ms,
            project,
        },
    )
}

fn answer() -> impl Strategy<Value = Answer> {
    (
        text(),
        prop_oneof![
            Just(Action::Submit),
            Just(Action::Decline),
            Just(Action::Cancel)
        ],
        proptest::option::of(json_object()),
        opt_text(),
    )
        .prop_map(|(id, action, values, note)| Answer {
            id,
            action,
            values,
            note,
            answered_by: None,
        })
}

fn refusal() -> impl Strategy<Value = Refusal> {
    (text(), opt_text(), text()).prop_map(|(id, field, message)| Refusal { id, field, message })
}

fn reason() -> impl Strategy<Value = WithdrawReason> {
    prop_oneof![
        Just(WithdrawReason::Timeout),
        Just(WithdrawReason::Cancelled),
        Just(WithdrawReason::Answered),
        Just(WithdrawReason::Shutdown),
    ]
}

fn host_info() -> impl Strategy<Value = HostInfo> {
    (text(), proptest::option::of(any::<u32>()), opt_text()).prop_map(|(version, pid, machine)| {
        HostInfo {
            version,
            pid,
            machine,
            kind: None,
        }
    })
}

fn extension_info() -> impl Strategy<Value = ExtensionInfo> {
    (text(), text()).prop_map(|(id, version)| ExtensionInfo { id, version })
}

fn agent_to_host() -> impl Strategy<Value = AgentToHost> {
    prop_oneof![
        (
            any::<u32>(),
            agent_info(),
            opt_text(),
            any::<u32>(),
            any::<bool>(),
            opt_text()
        )
            .prop_map(|(protocol, agent, project, pid, verdicts, machine)| {
                AgentToHost::Hello {
                    protocol,
                    agent,
                    project,
                    pid,
                    verdicts,
                    machine,
                }
            }),
        ask().prop_map(AgentToHost::Ask),
        (text(), reason(), opt_text(), opt_text()).prop_map(|(id, reason, via, by)| {
            AgentToHost::Withdraw {
                id,
                reason,
                keep: false,
                keep_until_ms: None,
                answered_via: via,
                answered_by: by,
            }
        }),
        text().prop_map(|id| AgentToHost::Accepted { id }),
        refusal().prop_map(AgentToHost::Refused),
    ]
}

fn host_to_agent() -> impl Strategy<Value = HostToAgent> {
    prop_oneof![
        (
            any::<u32>(),
            host_info(),
            proptest::option::of(extension_info()),
            any::<bool>(),
            proptest::option::of(any::<bool>())
        )
            .prop_map(|(protocol, host, extension, panel_open, verdicts)| {
                HostToAgent::Welcome(Welcome {
                    protocol,
                    host,
                    extension,
                    panel_open,
                    verdicts,
                })
            }),
        text().prop_map(|id| HostToAgent::Shown { id }),
        answer().prop_map(HostToAgent::Answer),
        (opt_text(), text()).prop_map(|(id, message)| HostToAgent::Error { id, message }),
    ]
}

fn host_to_extension() -> impl Strategy<Value = HostToExtension> {
    prop_oneof![
        (any::<u32>(), host_info(), any::<bool>()).prop_map(|(protocol, host, verdicts)| {
            HostToExtension::Hello {
                protocol,
                host,
                verdicts,
            }
        }),
        (ask(), agent_info(), opt_text(), opt_text()).prop_map(|(ask, agent, project, machine)| {
            // The host moves an ask's own project to the label (`host/relay.rs`).
            HostToExtension::Ask(LabelledAsk {
                ask: Ask {
                    project: None,
                    ..ask
                },
                agent,
                project,
                machine,
                kept_until_ms: None,
            })
        }),
        (text(), reason(), opt_text(), opt_text()).prop_map(|(id, reason, via, by)| {
            HostToExtension::Withdraw {
                id,
                reason,
                answered_via: via,
                answered_by: by,
            }
        }),
        text().prop_map(|id| HostToExtension::Accepted { id }),
        refusal().prop_map(HostToExtension::Refused),
        (opt_text(), text()).prop_map(|(id, message)| HostToExtension::Error { id, message }),
    ]
}

fn extension_to_host() -> impl Strategy<Value = ExtensionToHost> {
    prop_oneof![
        (any::<u32>(), extension_info(), opt_text(), any::<bool>()).prop_map(
            |(protocol, extension, browser, verdicts)| ExtensionToHost::Ready {
                protocol,
                extension,
                browser,
                verdicts,
            }
        ),
        text().prop_map(|id| ExtensionToHost::Shown { id }),
        answer().prop_map(ExtensionToHost::Answer),
        any::<bool>().prop_map(|open| ExtensionToHost::Panel { open }),
        (opt_text(), text()).prop_map(|(id, message)| ExtensionToHost::Error { id, message }),
    ]
}

/// Every decoder, on the same bytes; none may panic.
fn decode_all(bytes: &[u8]) {
    let _ = protocol::decode::<AgentToHost>(bytes);
    let _ = protocol::decode::<HostToAgent>(bytes);
    let _ = protocol::decode::<HostToExtension>(bytes);
    let _ = protocol::decode::<ExtensionToHost>(bytes);
    let _ = protocol::ProtocolError::id_in(bytes);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn decoding_never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        decode_all(&bytes);
    }

    #[test]
    fn decoding_never_panics_on_any_object_with_a_known_type(
        kind in prop_oneof![
            Just("hello"), Just("ask"), Just("withdraw"), Just("welcome"), Just("shown"),
            Just("answer"), Just("error"), Just("ready"), Just("panel"), Just("accepted"),
            Just("refused"), Just("other")
        ],
        mut fields in json_object(),
    ) {
        fields.insert("type".into(), json!(kind));
        decode_all(&serde_json::to_vec(&Value::Object(fields)).unwrap());
    }

    #[test]
    fn agent_to_host_messages_round_trip(message in agent_to_host()) {
        prop_assert_eq!(protocol::decode::<AgentToHost>(&protocol::encode(&message)), Ok(message));
    }

    #[test]
    fn host_to_agent_messages_round_trip(message in host_to_agent()) {
        prop_assert_eq!(protocol::decode::<HostToAgent>(&protocol::encode(&message)), Ok(message));
    }

    #[test]
    fn host_to_extension_messages_round_trip(message in host_to_extension()) {
        prop_assert_eq!(protocol::decode::<HostToExtension>(&protocol::encode(&message)), Ok(message));
    }

    #[test]
    fn extension_to_host_messages_round_trip(message in extension_to_host()) {
        prop_assert_eq!(protocol::decode::<ExtensionToHost>(&protocol::encode(&message)), Ok(message));
    }
}

// ---------------------------------------------------------------------------------------
// Forms and answers

fn kind() -> impl Strategy<Value = FieldType> {
    proptest::sample::select(FieldType::ALL.to_vec())
}

/// Any bound, including the ones a form may not have (NaN, infinities, fractions).
fn any_bound() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(prop_oneof![
        -5.0f64..10.0,
        (-3i32..8).prop_map(f64::from),
        Just(f64::NAN),
        Just(f64::INFINITY),
    ])
}

/// Forms of every shape, most of them broken somewhere.
fn any_form() -> impl Strategy<Value = Form> {
    let choice = ("[a-c]{0,2}", "[ a-c]{0,2}").prop_map(|(value, label)| Choice {
        value,
        label,
        description: None,
        recommended: false,
    });
    let field = (
        "[a-d ]{0,2}",
        kind(),
        "[ x]{0,2}",
        any::<bool>(),
        proptest::option::of(json_value()),
        proptest::collection::vec(choice, 0..4),
        any_bound(),
        any_bound(),
    )
        .prop_map(
            |(name, kind, label, required, default, options, min, max)| Field {
                name,
                kind,
                label,
                description: None,
                required,
                placeholder: None,
                default,
                options,
                min,
                max,
            },
        );
    (
        "[ q]{0,2}",
        proptest::collection::vec(field, 0..5),
        any::<bool>(),
    )
        .prop_map(|(title, fields, allow_note)| Form {
            title,
            description: None,
            submit_label: None,
            fields,
            allow_note,
            permission: None,
            one_question: false,
        })
}

/// Forms that keep every rule of §4, of every field type.
fn valid_form() -> impl Strategy<Value = Form> {
    let field = (
        kind(),
        any::<bool>(),
        1usize..5,
        0u8..4,
        0u8..4,
        -3i32..3,
        0i32..6,
    )
        .prop_map(
            |(kind, required, n_options, min_pick, max_pick, lo, span)| {
                let mut field = Field::new("f", kind, "Label");
                field.required = required;
                if kind.has_options() {
                    field.options = (0..n_options)
                        .map(|i| Choice::plain(format!("opt{i}")))
                        .collect();
                }
                match kind {
                    FieldType::Number => {
                        field.min = (min_pick % 2 == 0).then_some(f64::from(lo));
                        field.max = (max_pick % 2 == 0).then_some(f64::from(lo + span));
                    }
                    FieldType::MultiSelect => {
                        let min = usize::from(min_pick).min(n_options);
                        field.min = (min_pick < 3).then_some(min as f64);
                        field.max = (max_pick < 3).then_some((min + usize::from(max_pick)) as f64);
                    }
                    _ => {}
                }
                field
            },
        );
    (proptest::collection::vec(field, 1..5), any::<bool>()).prop_map(|(fields, allow_note)| {
        let fields = fields
            .into_iter()
            .enumerate()
            .map(|(i, mut f)| {
                f.name = format!("f{i}");
                f
            })
            .collect();
        Form {
            title: "Question".into(),
            description: None,
            submit_label: None,
            fields,
            allow_note,
            permission: None,
            one_question: false,
        }
    })
}

/// Candidate values for a field: fitting ones and near misses of every kind.
fn candidate() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(prop_oneof![
        Just(Value::Null),
        Just(json!("")),
        Just(json!("plain text")),
        Just(json!("a@b.co")),
        Just(json!("https://example.org/x")),
        Just(json!("opt0")),
        Just(json!("opt1")),
        Just(json!("opt9")),
        Just(json!(true)),
        Just(json!(false)),
        (-6i32..12).prop_map(|n| json!(n)),
        (-6.0f64..12.0).prop_map(|n| json!(n)),
        Just(json!([])),
        Just(json!(["opt0"])),
        Just(json!(["opt0", "opt1"])),
        Just(json!(["opt0", "opt1", "opt2"])),
        Just(json!(["opt1", "opt1"])),
        Just(json!(["opt9"])),
        Just(json!([1])),
        Just(json!({"x": 1})),
    ])
}

/// An independent reading of §4: does `value` fit `field`?
fn model_fits(field: &Field, value: Option<&Value>) -> bool {
    let options: Vec<&str> = field.options.iter().map(|o| o.value.as_str()).collect();
    let stringy = matches!(
        field.kind,
        FieldType::Text
            | FieldType::Email
            | FieldType::Url
            | FieldType::Password
            | FieldType::Textarea
            | FieldType::Select
            | FieldType::Radio
    );
    let empty = match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => stringy && s.is_empty(),
        Some(Value::Array(a)) => field.kind == FieldType::MultiSelect && a.is_empty(),
        _ => false,
    };
    if empty {
        // Leaving a field empty is fine unless it is required — or a multi_select whose
        // `min` asks for at least one choice.
        let min_unmet = field.kind == FieldType::MultiSelect && field.min.is_some_and(|m| m > 0.0);
        return !field.required && !min_unmet;
    }
    let Some(value) = value else { return true };
    let within = |n: f64| field.min.is_none_or(|m| n >= m) && field.max.is_none_or(|m| n <= m);
    match field.kind {
        FieldType::Text | FieldType::Password | FieldType::Textarea => value.is_string(),
        FieldType::Email => value.as_str().is_some_and(looks_like_email),
        FieldType::Url => value.as_str().is_some_and(looks_like_url),
        FieldType::Number => value.as_f64().is_some_and(within),
        FieldType::Checkbox | FieldType::Confirm => value.is_boolean(),
        FieldType::Select | FieldType::Radio => {
            value.as_str().is_some_and(|s| options.contains(&s))
        }
        FieldType::MultiSelect => value.as_array().is_some_and(|items| {
            let picked: Vec<Option<&str>> = items.iter().map(Value::as_str).collect();
            let mut unique = picked.clone();
            unique.sort();
            unique.dedup();
            picked
                .iter()
                .all(|p| p.is_some_and(|s| options.contains(&s)))
                && unique.len() == picked.len()
                && within(items.len() as f64)
        }),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn validating_and_checking_never_panic_on_any_form(
        form in any_form(),
        values in json_object(),
    ) {
        let _ = form.validate();
        let _ = form.check_answer(&values);
    }

    #[test]
    fn forms_built_by_the_rules_validate(form in valid_form()) {
        prop_assert_eq!(form.validate(), Ok(()));
    }

    #[test]
    fn check_answer_accepts_exactly_the_answers_that_fit(
        form in valid_form(),
        picks in proptest::collection::vec(candidate(), 5),
        stray in proptest::option::of(json_value()),
    ) {
        let mut values = Map::new();
        for (field, pick) in form.fields.iter().zip(&picks) {
            if let Some(value) = pick {
                values.insert(field.name.clone(), value.clone());
            }
        }
        if let Some(stray) = &stray {
            values.insert("not_a_field".into(), stray.clone());
        }
        let fits = stray.is_none()
            && form.fields.iter().all(|f| model_fits(f, values.get(&f.name)));
        let checked = form.check_answer(&values);
        prop_assert_eq!(checked.is_ok(), fits, "values {:?} -> {:?}", values, checked);
        if let Ok(normalised) = checked {
            // Every field present; what was given comes back as given, or as the empty
            // value for a field left empty.
            prop_assert_eq!(normalised.len(), form.fields.len());
            for field in &form.fields {
                let out = &normalised[&field.name];
                match values.get(&field.name) {
                    Some(given) if !given.is_null() && given != "" && given != &json!([]) => {
                        prop_assert_eq!(out, given)
                    }
                    _ => prop_assert!(out.is_null() || out == &json!([])),
                }
            }
        }
    }
}

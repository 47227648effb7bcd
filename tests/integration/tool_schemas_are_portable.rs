//! Every tool's input and output schema, as `tools/list` gives them, uses only what every
//! client reads (issue 12, item 5): formats that JSON Schema 2020-12 defines (schemars
//! writes `uint64`, `uint32`, `double`, which the TypeScript SDK's AJV warns on and AJV
//! strict refuses) and one `type` per schema (a `type` array such as `["string","null"]`
//! is what the Inspector's `--strict` and single-type dialects reject). And the output
//! schema still admits the `null`s that real results carry. The Node tests
//! (tests/e2e/clients.test.mjs, tests/e2e/node22/inspector.test.mjs) check the same with
//! the real validators; this one keeps `cargo test` guarding it without Node.

use crate::support::*;
use serde_json::{Value, json};

/// JSON Schema 2020-12, Validation §7.3, written out here rather than taken from the code
/// under test.
const FORMATS_2020_12: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every problem in `schema` and its subschemas, each with its path. Walks every value,
/// so a subschema under any keyword (and a `properties` entry named like a keyword) is
/// seen; a `format` or `type` key whose value is a schema (a property of that name) is
/// told apart by its value's shape.
fn problems(schema: &Value, path: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let at = format!("{path}.{key}");
                match (key.as_str(), value) {
                    ("format", Value::String(format))
                        if !FORMATS_2020_12.contains(&format.as_str()) =>
                    {
                        found.push(format!("{at}: format {format:?} is not defined by 2020-12"));
                    }
                    ("type", Value::Array(types)) => {
                        found.push(format!("{at}: a type array {types:?}"));
                    }
                    ("default", Value::Null) => {
                        found.push(format!("{at}: default null"));
                    }
                    _ => {}
                }
                problems(value, &at, found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                problems(item, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

/// Whether a property's schema lets `null` through (`type` "null" or a list holding it,
/// or an `anyOf` branch that does). A `type` list is the other test's business; this one
/// guards against a portable spelling that lost the `null`.
fn admits_null(schema: &Value) -> bool {
    schema["type"] == "null"
        || schema["type"]
            .as_array()
            .is_some_and(|types| types.contains(&json!("null")))
        || schema["anyOf"]
            .as_array()
            .is_some_and(|branches| branches.iter().any(admits_null))
}

#[tokio::test]
async fn every_tool_schema_uses_only_2020_12_formats_and_single_types() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "schema-walker", &[]).await;
    let tools = agent.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), TOOLS.len());
    let mut found = Vec::new();
    for tool in &tools {
        let input = Value::Object(tool.input_schema.as_ref().clone());
        problems(&input, &format!("{}.inputSchema", tool.name), &mut found);
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object(s.as_ref().clone()))
            .unwrap_or_else(|| panic!("{} has no outputSchema", tool.name));
        problems(&output, &format!("{}.outputSchema", tool.name), &mut found);
        // Arguments a tool does not define are refused, and the schema says so.
        assert_eq!(
            input["additionalProperties"],
            json!(false),
            "{}: {input}",
            tool.name
        );
    }
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[tokio::test]
async fn the_output_schema_admits_every_null_a_real_result_carries() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "schema-nulls", &[]).await;
    let tools = agent.list_all_tools().await.unwrap();
    let schema_of = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect("listed");
        Value::Object(
            tool.output_schema
                .as_ref()
                .expect("outputSchema")
                .as_ref()
                .clone(),
        )
    };
    // No browser and no elicitation: handed back to the chat, most fields null.
    let result = call(&agent, "ask_confirm", json!({"question": "Ship it?"})).await;
    assert_eq!(result["status"], "needs_user_input");
    let schema = schema_of("ask_confirm");
    let mut nulls = 0;
    for (key, value) in result.as_object().expect("an object") {
        if value.is_null() {
            nulls += 1;
            assert!(
                admits_null(&schema["properties"][key]),
                "{key} is null in {result} but its schema is {}",
                schema["properties"][key]
            );
        }
    }
    assert!(nulls >= 3, "expected null fields in {result}");
    // An extension that has not said who it is yet: null id and version.
    let status_schema = schema_of("human_input_status");
    let browser = &status_schema["properties"]["browsers"]["items"]["properties"];
    assert!(admits_null(&browser["extension_id"]) && admits_null(&browser["extension_version"]));
}

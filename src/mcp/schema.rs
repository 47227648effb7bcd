//! The tools' JSON Schemas in their most portable spelling (issue 12, item 5).
//!
//! schemars writes what Rust knows: `"format": "uint64"` (or `uint32`, `double`) on every
//! number, `"type": ["string", "null"]` for an `Option`, `"default": null` for an optional
//! argument. Each is legal JSON Schema, and each breaks a real client: the TypeScript SDK's
//! AJV warns on every format 2020-12 does not define (Claude Code prints one line per
//! format on each `claude mcp list`), AJV in strict mode refuses to compile them, and
//! clients that map schemas onto a single-`type` dialect (Gemini's OpenAPI subset; the
//! Inspector's `--strict` check) reject or drop `type` arrays. [`make_portable`] rewrites a
//! schema once, wherever it was generated, so each tool's schema stays derived from its
//! Rust type:
//! - a `format` 2020-12 does not define is dropped; an unsigned one leaves `minimum: 0`;
//! - a `type` array becomes `anyOf` with one single-`type` branch per type, each taking
//!   the keywords that apply to its type (a nullable field is `anyOf: [{type: T}, {type:
//!   "null"}]`: results always carry every field, so `null` must validate, and absent is a
//!   different contract);
//! - `"default": null` is dropped: it is no value of the field's type, and says nothing.

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::Schema;
use schemars::transform::{RecursiveTransform, Transform};
use serde_json::{Map, Value};

/// The formats JSON Schema 2020-12 defines (Validation, §7.3).
pub const STANDARD_FORMATS: [&str; 19] = [
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

/// Which instance type a keyword constrains, for splitting a `type` array into branches;
/// `None` for keywords of every type (`enum`, `const`, annotations), which stay put.
fn keyword_type(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "items" | "prefixItems" | "additionalItems" | "unevaluatedItems" | "contains"
        | "minContains" | "maxContains" | "minItems" | "maxItems" | "uniqueItems" => "array",
        "properties"
        | "patternProperties"
        | "additionalProperties"
        | "unevaluatedProperties"
        | "propertyNames"
        | "required"
        | "dependentRequired"
        | "dependentSchemas"
        | "minProperties"
        | "maxProperties" => "object",
        "minLength" | "maxLength" | "pattern" | "format" | "contentEncoding"
        | "contentMediaType" | "contentSchema" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        _ => return None,
    })
}

/// Rewrites `schema` and every subschema in it into the portable spelling (module doc).
/// schemars' own walk finds the subschemas: every keyword schemars writes is among those it
/// follows.
pub fn make_portable(schema: &mut Map<String, Value>) {
    let mut wrapped = Schema::from(std::mem::take(schema));
    RecursiveTransform(Portable).transform(&mut wrapped);
    if let Value::Object(portable) = wrapped.to_value() {
        *schema = portable;
    }
}

/// One schema's rewrite, without its subschemas.
struct Portable;

impl Transform for Portable {
    fn transform(&mut self, schema: &mut Schema) {
        let Some(schema) = schema.as_object_mut() else {
            return;
        };
        portable_format(schema);
        if schema.get("default").is_some_and(Value::is_null) {
            schema.remove("default");
        }
        split_type_array(schema);
    }
}

fn portable_format(schema: &mut Map<String, Value>) {
    let Some(format) = schema.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    // schemars names unsigned integers `uint`, `uint8` … `uint128`: that much of the
    // meaning is kept, as a bound every validator knows.
    let unsigned = format.starts_with("uint");
    schema.remove("format");
    if unsigned && !schema.contains_key("minimum") && !schema.contains_key("exclusiveMinimum") {
        schema.insert("minimum".into(), Value::from(0));
    }
}

fn split_type_array(schema: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = schema.get("type") else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    schema.remove("type");
    let mut branches: Vec<Map<String, Value>> = types
        .iter()
        .map(|t| Map::from_iter([("type".to_owned(), Value::from(t.as_str()))]))
        .collect();
    let keywords: Vec<String> = schema
        .keys()
        .filter(|k| keyword_type(k).is_some())
        .cloned()
        .collect();
    for keyword in keywords {
        let Some(value) = schema.remove(&keyword) else {
            continue;
        };
        let owner = keyword_type(&keyword);
        for (branch, t) in branches.iter_mut().zip(&types) {
            let applies = owner == Some(t.as_str()) || (owner == Some("number") && t == "integer");
            if applies {
                branch.insert(keyword.clone(), value.clone());
            }
        }
    }
    let any_of = Value::Array(branches.into_iter().map(Value::Object).collect());
    match schema.remove("anyOf") {
        // Both must hold: the schema's own `anyOf` and the one spelling its types.
        Some(existing) => {
            let all_of = schema
                .entry("allOf")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(all_of) = all_of {
                all_of.push(Value::Object(Map::from_iter([(
                    "anyOf".to_owned(),
                    existing,
                )])));
                all_of.push(Value::Object(Map::from_iter([(
                    "anyOf".to_owned(),
                    any_of,
                )])));
            }
        }
        None => {
            schema.insert("anyOf".into(), any_of);
        }
    }
}

/// rmcp's output schema for `T` (what `T` serialises to), made portable. Kept once made,
/// as rmcp keeps its own: every server value builds its tool list anew (over HTTP, each
/// sessionless request does).
pub fn output_schema<T: schemars::JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    thread_local! {
        static MADE: RefCell<HashMap<TypeId, Arc<JsonObject>>> = RefCell::default();
    }
    MADE.with(|made| {
        made.borrow_mut()
            .entry(TypeId::of::<T>())
            .or_insert_with(|| {
                let mut schema = rmcp::handler::server::common::schema_for_output::<T>()
                    .as_ref()
                    .clone();
                make_portable(&mut schema);
                Arc::new(schema)
            })
            .clone()
    })
}

/// Where, if anywhere, `value` uses a key its `schema` does not allow
/// (`additionalProperties: false`): the path of the offending key, and the keys that
/// object does take. Follows `properties`, `items` and the `anyOf` branch of the value's
/// type, which is as far as the tools' argument schemas go.
pub fn unknown_key(schema: &Map<String, Value>, value: &Value) -> Option<UnknownKey> {
    unknown_key_at(schema, value, String::new())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The object holding the key (`""` for the arguments themselves, else e.g. `fields[1]`).
    pub within: String,
    pub key: String,
    /// The keys that object takes, in the schema's order.
    pub known: Vec<String>,
}

impl UnknownKey {
    /// `fields[1].lable`, or `questoin` at the top.
    pub fn path(&self) -> String {
        if self.within.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.within, self.key)
        }
    }

    /// The known key this one is most likely a misspelling of, if one is close: the same
    /// letters but for case, `_` and `-` (`timeoutMs` for `timeout_ms`), a prefix
    /// (`timeout`), or at most two edits.
    pub fn near(&self) -> Option<&str> {
        let squash = |s: &str| -> String {
            s.chars()
                .filter(|c| *c != '_' && *c != '-')
                .flat_map(char::to_lowercase)
                .collect()
        };
        let key = squash(&self.key);
        self.known
            .iter()
            .map(|known| {
                let candidate = squash(known);
                let distance = if candidate == key {
                    0
                } else if key.len() >= 4
                    && (candidate.starts_with(&key) || key.starts_with(&candidate))
                {
                    1
                } else {
                    strsim::osa_distance(&key, &candidate)
                };
                (distance, known.as_str())
            })
            .filter(|(distance, _)| *distance <= 2)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, known)| known)
    }
}

fn unknown_key_at(schema: &Map<String, Value>, value: &Value, path: String) -> Option<UnknownKey> {
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        let branch = branches
            .iter()
            .filter_map(Value::as_object)
            .find(|b| b.get("type").and_then(Value::as_str) == Some(json_type(value)))?;
        return unknown_key_at(branch, value, path);
    }
    match value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                let known = || {
                    properties
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default()
                };
                if let Some(key) = object
                    .keys()
                    .find(|k| !properties.is_some_and(|p| p.contains_key(*k)))
                {
                    return Some(UnknownKey {
                        within: path,
                        key: key.clone(),
                        known: known(),
                    });
                }
            }
            let properties = properties?;
            object.iter().find_map(|(key, v)| {
                let sub = properties.get(key)?.as_object()?;
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                unknown_key_at(sub, v, at)
            })
        }
        Value::Array(items) => {
            let sub = schema.get("items")?.as_object()?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| unknown_key_at(sub, v, format!("{path}[{i}]")))
        }
        _ => None,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn portable(schema: Value) -> Value {
        let Value::Object(mut schema) = schema else {
            panic!("an object schema")
        };
        make_portable(&mut schema);
        Value::Object(schema)
    }

    #[test]
    fn a_nullable_type_becomes_any_of_with_a_null_branch() {
        assert_eq!(
            portable(json!({"description": "d", "type": ["string", "null"]})),
            json!({"description": "d", "anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }

    #[test]
    fn each_branch_takes_the_keywords_of_its_type() {
        assert_eq!(
            portable(
                json!({"type": ["integer", "array", "null"], "format": "uint32",
                            "minimum": 0, "items": {"type": "string"}})
            ),
            json!({"anyOf": [{"type": "integer", "minimum": 0},
                             {"type": "array", "items": {"type": "string"}},
                             {"type": "null"}]})
        );
    }

    #[test]
    fn formats_2020_12_does_not_define_go_and_unsigned_leaves_a_minimum() {
        assert_eq!(
            portable(json!({"properties": {
                "a": {"type": "integer", "format": "uint64", "default": null},
                "b": {"type": "number", "format": "double"},
                "c": {"type": "string", "format": "email"}}})),
            json!({"properties": {
                "a": {"type": "integer", "minimum": 0},
                "b": {"type": "number"},
                "c": {"type": "string", "format": "email"}}})
        );
    }

    #[test]
    fn an_existing_any_of_is_kept_beside_the_split_type() {
        let schema = portable(json!({"type": ["string", "null"], "anyOf": [{"minLength": 1}]}));
        assert_eq!(
            schema,
            json!({"allOf": [{"anyOf": [{"minLength": 1}]},
                             {"anyOf": [{"type": "string"}, {"type": "null"}]}]})
        );
    }

    fn args_schema() -> Map<String, Value> {
        let Value::Object(schema) = json!({
            "type": "object", "additionalProperties": false,
            "properties": {
                "question": {"type": "string"},
                "timeout_ms": {"type": "integer"},
                "fields": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "properties": {"label": {"type": "string"}, "options": {"type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "object",
                            "additionalProperties": false, "properties": {"value": {}}}]}}}}}}
        }) else {
            unreachable!()
        };
        schema
    }

    #[test]
    fn an_unknown_key_is_found_with_its_path_and_nearest_known_key() {
        let schema = args_schema();
        let found = unknown_key(&schema, &json!({"questoin": "q"})).unwrap();
        assert_eq!(
            (found.path().as_str(), found.near()),
            ("questoin", Some("question"))
        );
        let found = unknown_key(&schema, &json!({"question": "q", "timeoutMs": 5})).unwrap();
        assert_eq!(found.near(), Some("timeout_ms"));
        let found = unknown_key(&schema, &json!({"timeout": 5})).unwrap();
        assert_eq!(found.near(), Some("timeout_ms"));
        let found = unknown_key(&schema, &json!({"colour": 5})).unwrap();
        assert_eq!(found.near(), None);
        let found = unknown_key(
            &schema,
            &json!({"fields": [{"label": "a"}, {"lable": "b"}]}),
        )
        .unwrap();
        assert_eq!(
            (found.path().as_str(), found.near()),
            ("fields[1].lable", Some("label"))
        );
        let found = unknown_key(
            &schema,
            &json!({"fields": [{"options": ["a", {"value": "b", "vaule": "c"}]}]}),
        )
        .unwrap();
        assert_eq!(found.path(), "fields[0].options[1].vaule");
        assert_eq!(
            unknown_key(
                &schema,
                &json!({"question": "q", "fields": [{"options": ["a"]}]})
            ),
            None
        );
    }
}

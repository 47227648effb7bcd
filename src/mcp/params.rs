//! Tool arguments that fail to deserialise are a JSON-RPC invalid-params error (DESIGN.md
//! §5), naming the argument. rmcp's own `Parameters` turns them into a tool-level error
//! result instead, so the tools take this extractor. It keeps the name `Parameters`
//! because rmcp's `#[tool]` macro finds the input schema by that name; that is also why
//! the schema is made portable here (`schema.rs`): every tool's input passes through.

use rmcp::handler::server::common::{FromContextPart, schema_for_type};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::ErrorData;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::schema::{UnknownKey, make_portable, unknown_key};

pub struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = P::json_schema(generator);
        if let Some(object) = schema.as_object_mut() {
            make_portable(object);
        }
        schema
    }
}

impl<S, P: DeserializeOwned + JsonSchema + 'static> FromContextPart<ToolCallContext<'_, S>>
    for Parameters<P>
{
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = Value::Object(context.arguments.take().unwrap_or_default());
        // Checked against the schema the client was given, before serde: serde's own
        // refusal (`deny_unknown_fields`) cannot say where in `fields[]` the key was, nor
        // what was probably meant. An argument the tool does not know is never dropped:
        // `timeout` instead of `timeout_ms` would otherwise wait the default five minutes.
        if let Some(unknown) = unknown_key(&schema_for_type::<Parameters<P>>(), &arguments) {
            return Err(unknown_argument(&context.name, &unknown));
        }
        serde_json::from_value(arguments)
            .map(Parameters)
            .map_err(|err| ErrorData::invalid_params(format!("invalid arguments: {err}"), None))
    }
}

fn unknown_argument(tool: &str, unknown: &UnknownKey) -> ErrorData {
    let path = unknown.path();
    let hint = unknown
        .near()
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    let known = unknown
        .known
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let message = if unknown.known.is_empty() {
        format!("unknown argument `{path}`: {tool} takes no arguments")
    } else if unknown.within.is_empty() {
        format!("unknown argument `{path}`{hint}: {tool} takes {known}")
    } else {
        format!(
            "unknown key `{}` in `{}`{hint}: it takes {known}",
            unknown.key, unknown.within
        )
    };
    ErrorData::invalid_params(message, Some(json!({ "argument": path })))
}

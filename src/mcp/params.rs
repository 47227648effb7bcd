//! Tool arguments that fail to deserialise are a JSON-RPC invalid-params error (DESIGN.md
//! §5), naming the argument. rmcp's own `Parameters` turns them into a tool-level error
//! result instead, so the tools take this extractor. It keeps the name `Parameters`
//! because rmcp's `#[tool]` macro finds the input schema by that name.

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::ErrorData;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        P::json_schema(generator)
    }
}

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<P> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        serde_json::from_value(serde_json::Value::Object(arguments))
            .map(Parameters)
            .map_err(|err| ErrorData::invalid_params(format!("invalid arguments: {err}"), None))
    }
}

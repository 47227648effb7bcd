"""The real Python `mcp` 2.3 client over stdio, reading the numbers of an elicitation form.

Usage: python3 python_elicitation_numbers.py HIM_BIN RUNTIME_DIR FORM_ARGS_JSON MODE

Starts `him serve` as the SDK starts a server (its default environment plus the runtime
directory, where no browser listens), in MODE: "legacy" (a session at protocol 2025-11-25,
where the form comes as `elicitation/create`) or "auto" (the SDK's default, which settles on
2026-07-28, where it comes inside the `input_required` result and the SDK retries the call),
calls `ask_form` with FORM_ARGS_JSON, and in the elicitation callback
notes the Python type of each bound and default the form carries (`int` or `float`, as the
SDK parsed the JSON), then accepts with replicas 4. Prints one JSON line.
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment

KEYS = ("minimum", "maximum", "default", "minItems", "maxItems")


async def main(him: str, runtime: str, form_args: str, mode: str) -> None:
    types_seen = {}

    async def elicit(context, params):
        for name, prop in params.requested_schema["properties"].items():
            for key in KEYS:
                if key in prop:
                    types_seen[f"{name}.{key}"] = type(prop[key]).__name__
        return types.ElicitResult(
            action="accept", content={"replicas": 4, "suites": ["unit"]}
        )

    server = StdioServerParameters(
        command=him,
        args=["serve"],
        env={
            **get_default_environment(),
            "HIM_RUNTIME_DIR": runtime,
            "HIM_RECONNECT_GRACE_MS": "0",
            "HIM_AUTO_REJECT_MS": "0",
        },
    )
    async with Client(
        server,
        mode=mode,
        elicitation_callback=elicit,
        client_info=types.Implementation(name="python-numbers", version="2.3.0"),
    ) as client:
        version = client.session.protocol_version
        result = await client.call_tool("ask_form", json.loads(form_args))

    print(
        json.dumps(
            {
                "version": str(version),
                "types": types_seen,
                "result": result.structured_content,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]))

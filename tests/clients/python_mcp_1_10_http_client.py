"""The real Python `mcp` 1.10 client (protocol 2025-06-18) against `him serve --http`.

Usage: python python_mcp_1_10_http_client.py URL TOKEN FORM_ARGS_JSON

As a program of its time uses it: `streamablehttp_client` and a `ClientSession` with an
elicitation callback, which open a session (initialize ... DELETE) and its standalone GET
stream. It lists the tools, asks `human_input_status`, and calls `ask_form` with
FORM_ARGS_JSON, which no browser answers, so the form comes to the callback
(`elicitation/create` on the call's own stream); the callback notes the Python type of each
bound and default and accepts replicas 4. (No multi-select: a 2025-06-18 form holds primitives
only, and `mcp` 1.10 cannot send a list back.)

Every record the SDK logs at WARNING or above is kept (and shown on stderr): `mcp` 1.10
`JSON.parse`s, in effect, every SSE event, and logged "Error parsing SSE message" for each
stream that opened with a priming event (empty data), four times a session, before him
sent priming events only to sessions of 2025-11-25 and later. Prints one JSON line.
"""

import asyncio
import json
import logging
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

KEYS = ("minimum", "maximum", "default", "minItems", "maxItems")


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


async def main(url: str, token: str, form_args: str) -> None:
    kept = Kept()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger().addHandler(kept)
    types_seen = {}

    async def elicit(context, params):
        for name, prop in params.requestedSchema["properties"].items():
            for key in KEYS:
                if key in prop:
                    types_seen[f"{name}.{key}"] = type(prop[key]).__name__
        return types.ElicitResult(action="accept", content={"replicas": 4})

    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(
            read,
            write,
            elicitation_callback=elicit,
            client_info=types.Implementation(name="python-mcp-1.10", version="1.10.0"),
        ) as session:
            initialized = await session.initialize()
            tools = await session.list_tools()
            status = await session.call_tool("human_input_status", {})
            result = await session.call_tool("ask_form", json.loads(form_args))

    print(
        json.dumps(
            {
                "version": str(initialized.protocolVersion),
                "tools": sorted(t.name for t in tools.tools),
                "status": status.structuredContent,
                "types": types_seen,
                "result": result.structuredContent,
                "logged": kept.records,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

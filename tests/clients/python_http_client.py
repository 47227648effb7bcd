"""The real Python `mcp` 2.3 client against `him serve --http`, as a user would run it.

Usage: python3 python_http_client.py URL TOKEN

1. mode="auto" (the SDK's default): it probes `server/discover` and picks 2026-07-28, where
   every request stands alone. No browser is connected, so `ask_text` comes back as
   `input_required`; the SDK calls the elicitation callback and retries the call, which a
   new server on him's side must accept.
2. mode="legacy": a session (initialize ... DELETE), closed cleanly.

Prints one JSON line with what happened; the SDK's log goes to stderr, where the Rust
test looks for "Session termination failed".
"""

import asyncio
import json
import logging
import sys

import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


async def main(url: str, token: str) -> None:
    forms = []

    async def elicit(context, params):
        forms.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "Ada"})

    def transport():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return streamable_http_client(url, http_client=http)

    async with Client(
        transport(),
        mode="auto",
        elicitation_callback=elicit,
        client_info=types.Implementation(name="python-sdk-auto", version="2.3.0"),
    ) as client:
        version = client.session.protocol_version
        result = await client.call_tool("ask_text", {"question": "Your name?"})
        auto = result.structured_content

    async with Client(
        transport(),
        mode="legacy",
        client_info=types.Implementation(name="python-sdk-legacy", version="2.3.0"),
    ) as client:
        legacy_version = client.session.protocol_version
        status = await client.call_tool("human_input_status", {})
        legacy = status.structured_content

    print(
        json.dumps(
            {
                "auto_version": str(version),
                "auto": auto,
                "forms": forms,
                "legacy_version": str(legacy_version),
                "legacy": legacy,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

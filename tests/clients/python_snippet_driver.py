"""Runs a `him config` Python snippet as a person's program would, through the client's own API.

Usage: python python_snippet_driver.py CLIENT SNIPPET RUNTIME_DIR TOOL ARGS_JSON

CLIENT is langchain, openai-agents or pydantic-ai. The driver executes SNIPPET (the file
`him config CLIENT` printed), which builds the client's server object, then lists the tools and
calls TOOL with ARGS_JSON through that object, with no model in between. It prints one JSON
line: {"tools": [names], "result": the call's structured content or null, "error": {"type",
"message"} or null, "elapsed_s": seconds the call took}. For the OpenAI Agents SDK, a `pending`
result is followed as its next_step says, with get_answer until it is not `pending`; "pending"
counts them and "elapsed_s" covers them all.

The one change to the client: the MCP SDK's default environment (what it gives a stdio server
besides the snippet's `env`) also carries HIM_RUNTIME_DIR, the private directory where the
test's host listens, so that no test reaches a real browser (as tests/e2e/clients.test.mjs
does), and HIM_STATE_DIR, the state folder that host keeps late answers in (RUNTIME_DIR/state/him,
as tests/integration/support names it): on a person's machine both ends find the same folder from the
password database. The driver itself runs with only PATH and HOME.
"""

import asyncio
import json
import sys
import time

import mcp.client.stdio


def point_servers_at(runtime: str) -> None:
    default = mcp.client.stdio.get_default_environment

    def with_runtime_dir() -> dict[str, str]:
        return {
            **default(),
            "HIM_RUNTIME_DIR": runtime,
            "HIM_STATE_DIR": runtime + "/state/him",
        }

    mcp.client.stdio.get_default_environment = with_runtime_dir


def run_snippet(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        source = f.read()
    namespace: dict = {"__name__": "him_mcp"}
    exec(compile(source, path, "exec"), namespace)
    return namespace


async def timed(call):
    started = time.monotonic()
    try:
        result, error = await call, None
    except Exception as e:  # the report says what the client raised
        # A client that runs its session in a task group raises the error inside a group.
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        result, error = None, {"type": type(e).__name__, "message": str(e)}
    return result, error, time.monotonic() - started


async def openai_agents(ns: dict, tool: str, args: dict) -> dict:
    him = ns["him"]
    pending = 0
    async with him:
        tools = [t.name for t in await him.list_tools()]
        result, error, elapsed = await timed(him.call_tool(tool, args))
        # A `pending` result (HIM_RETURN_AFTER_MS) says to call get_answer with its
        # question_id, as often as it says pending again: done as an agent would.
        while error is None and result.structured_content["status"] == "pending" and pending < 30:
            pending += 1
            again = {"question_id": result.structured_content["question_id"]}
            more, error, took = await timed(him.call_tool("get_answer", again))
            elapsed += took
            result = more if error is None else result
        if error is not None:
            # As an agent goes on after a failed tool call: the session is still in use, and a
            # cancellation the SDK sent reaches him before this call does.
            after, after_error, _ = await timed(him.call_tool("human_input_status", {}))
            error["then_status"] = after_error or after.structured_content["channel"]
    structured = None if result is None or error is not None else result.structured_content
    return {"tools": tools, "result": structured, "error": error, "elapsed_s": elapsed, "pending": pending}


async def langchain(ns: dict, tool: str, args: dict) -> dict:
    client = ns["client"]
    tools = await client.get_tools()
    [chosen] = [t for t in tools if t.name == tool]
    # Invoked with a tool call, a LangChain tool returns a ToolMessage whose artifact holds the
    # MCP result's structured content.
    call = {"type": "tool_call", "id": "call-1", "name": tool, "args": args}
    message, error, elapsed = await timed(chosen.ainvoke(call))
    structured = None
    if message is not None and message.artifact is not None:
        structured = message.artifact["structured_content"]
    return {"tools": [t.name for t in tools], "result": structured, "error": error, "elapsed_s": elapsed}


async def pydantic_ai(ns: dict, tool: str, args: dict) -> dict:
    him = ns["him"]
    async with him:
        tools = [t.name for t in await him.list_tools()]
        result, error, elapsed = await timed(him.direct_call_tool(tool, args))
    return {"tools": tools, "result": result, "error": error, "elapsed_s": elapsed}


CLIENTS = {"openai-agents": openai_agents, "langchain": langchain, "pydantic-ai": pydantic_ai}


def main(client: str, snippet: str, runtime: str, tool: str, args: str) -> None:
    point_servers_at(runtime)
    ns = run_snippet(snippet)
    report = asyncio.run(CLIENTS[client](ns, tool, json.loads(args)))
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])

"""The MCP server the `claude` CLI talks to: our Dev tools, answered by the harness.

The CLI runs its own tool loop. To keep every tool call inside the milestone's sandbox and in the
event log, the CLI gets no built-in tools, only these, served over MCP (stdio). The bridge runs
nothing itself: each `tools/call` is forwarded over a local socket to the `ClaudeCodeAgent` in the
harness process, which answers with the result the harness recorded. Started by the CLI as
`python -m harnessforge.agents.mcp_bridge TOOLS_JSON SOCKET` with the socket's key in
`HF_BRIDGE_KEY`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from multiprocessing.connection import Client, Connection

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SERVER = "hf"  # the CLI names our tools mcp__hf__<tool>
PREFIX = f"mcp__{SERVER}__"


def mcp_tools(tools: list[dict]) -> list[types.Tool]:
    """OpenAI function schemas (the harness's one tool schema) as MCP tools."""
    return [
        types.Tool(name=f["name"], description=f.get("description", ""), input_schema=f["parameters"])
        for f in (tool["function"] for tool in tools)
    ]


def serve(tools_path: str, socket_path: str, authkey: bytes) -> None:
    tools = mcp_tools(json.loads(open(tools_path).read()))
    conn: list[Connection] = []
    lock = threading.Lock()  # the CLI may call tools in parallel: one question and answer at a time

    def ask(name: str, arguments: dict) -> dict:
        with lock:
            if not conn:
                conn.append(Client(socket_path, family="AF_UNIX", authkey=authkey))
            conn[0].send({"name": name, "arguments": arguments})
            return conn[0].recv()

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        answer = await anyio.to_thread.run_sync(ask, params.name, params.arguments or {})
        content = [types.TextContent(type="text", text=text) for text in answer["content"]]
        return types.CallToolResult(content=content, is_error=answer.get("is_error", False))

    server = Server(SERVER, on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], os.environ["HF_BRIDGE_KEY"].encode())

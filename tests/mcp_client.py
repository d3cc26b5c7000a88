"""One run of the official MCP Python client against `lanescope mcp` (tests/it/mcp.rs).

Usage: python3 mcp_client.py LANESCOPE TRACE. Prints a JSON object: the tool names,
whether `summary` was an error, and its headline.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary: str, trace: str) -> None:
    # The client gives the server a short list of variables only: pass the test's cache
    # folder on, so that the server keeps off the user's cache.
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "XDG_CACHE_HOME")}
    server = StdioServerParameters(command=binary, args=["mcp"], env=env)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("summary", {"trace": trace})
            summary = json.loads(result.content[0].text)
            print(json.dumps({
                "tools": [t.name for t in tools.tools],
                "is_error": bool(getattr(result, "is_error", getattr(result, "isError", False))),
                "headline": summary["headline"],
            }))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=120))

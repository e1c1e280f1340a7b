"""A server on the official MCP Python SDK's low-level `Server` that paginates its tools and
resources two per page with opaque cursors, for ../test_gateway_everything.py:
@modelcontextprotocol/server-everything 2026.8.31 returns every list in one page."""

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [f"tool-{i}" for i in range(5)]
DOCS = [f"doc://library/{i}" for i in range(5)]
PAGE = 2


def page(items, params):
    """The page of `items` the cursor points at, and the next cursor (none after the last)."""
    start = int((params.cursor if params and params.cursor else "c0")[1:])
    rest = start + PAGE
    return items[start:rest], (f"c{rest}" if rest < len(items) else None)


async def list_tools(ctx, params):
    names, cursor = page(TOOLS, params)
    tools = [types.Tool(name=n, description=f"{n} echoes", input_schema={"type": "object"}) for n in names]
    return types.ListToolsResult(tools=tools, next_cursor=cursor)


async def list_resources(ctx, params):
    uris, cursor = page(DOCS, params)
    docs = [types.Resource(uri=u, name=u.rsplit("/", 1)[1], mime_type="text/plain") for u in uris]
    return types.ListResourcesResult(resources=docs, next_cursor=cursor)


async def read_resource(ctx, params):
    text = f"contents of {params.uri}"
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=text)])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}: {params.arguments}")])


server = Server(
    "paged-library",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

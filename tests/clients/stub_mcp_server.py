"""A stand-in MCP server built on the official Python SDK's own server (mcp 2.x).

Only for developing and self-testing the client checks (`run.sh --stub`) while the real
`/mcp` endpoint of the signage binary is not there yet, and as a wire reference: it is the
SDK's reference implementation of both eras (initialize handshake with sessions, and the
stateless 2026-07-28 revision with `server/discover`), so its answers show what the
official clients are built to accept. It is never part of the judgement of the real server.

It mirrors the parts of the signage contract that the checks touch: the two required
headers (`Authorization: Bearer <key>`, `X-Service-Client-Id`), a read-only key that sees
no write tools, the two-step write flow, and Host/Origin checks for DNS rebinding.

Usage: python stub_mcp_server.py --port 0   (prints `stub listening on http://127.0.0.1:PORT`)
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = json.loads((REPO / "fixtures" / "demo-credentials.json").read_text())
KEYS = {k["rawKey"]: k for k in CREDENTIALS["keys"]}

AREAS = {
    "list_companies": "Companies visible to the caller's key.",
    "get_company_branding": "Logos and brand tokens of one company.",
    "list_devices": "Screens of the visible companies.",
    "list_ads": "Ads and the devices they are assigned to.",
    "list_promotions": "Promotions, their QR codes and whether they are active.",
    "list_plans": "Plans visible to the caller.",
    "get_token_balance": "Token balance and packs.",
    "list_invoices": "Invoices and recent charges.",
    "list_media": "Media items.",
    "list_webhooks": "Configured webhook integrations.",
}
WRITE_TOOLS = {
    "prepare_ad_change": "Preview a change to an ad; nothing is executed until confirm_change.",
    "confirm_change": "Execute a previewed change after the user's explicit confirmation.",
}


def _key_of(request: Any) -> dict[str, Any] | None:
    auth = request.headers.get("authorization", "") if request is not None else ""
    raw = auth[7:] if auth.lower().startswith("bearer ") else ""
    return KEYS.get(raw)


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str], read_only: bool) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        annotations=types.ToolAnnotations(read_only_hint=read_only),
    )


def _text(value: Any, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value))],
        structured_content=value if isinstance(value, dict) else {"data": value},
        is_error=is_error,
    )


PENDING: dict[str, dict[str, Any]] = {}


async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    key = _key_of(ctx.request)
    tools = [
        _tool("service_health_check", "Health of the MCP server and its backend.", {}, [], True),
        _tool("get_api_key_permissions", "Scopes and company scope of the caller's key.", {}, [], True),
    ]
    for name, description in AREAS.items():
        props = {"company_id": {"type": "string"}} if name == "get_company_branding" else {}
        tools.append(_tool(name, description, props, list(props), True))
    scopes = key["scopes"] if key else []
    if "write" in scopes or "admin" in scopes:
        tools.append(
            _tool(
                "prepare_ad_change",
                WRITE_TOOLS["prepare_ad_change"],
                {"ad_id": {"type": "string"}, "changes": {"type": "object"}},
                ["ad_id", "changes"],
                False,
            )
        )
        tools.append(
            _tool("confirm_change", WRITE_TOOLS["confirm_change"], {"change_id": {"type": "string"}}, ["change_id"], False)
        )
    return types.ListToolsResult(tools=tools)


async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    key = _key_of(ctx.request) or {}
    args = params.arguments or {}
    name = params.name
    if name == "service_health_check":
        return _text({"ok": True, "backendAuthMode": "passthrough"})
    if name == "get_api_key_permissions":
        return _text({"key_id": key.get("key_id"), "scopes": key.get("scopes"), "companyScope": key.get("companyScope")})
    if name == "list_companies":
        companies = [
            {"id": c["id"], "object": "company", "name": c["name"]}
            for c in CREDENTIALS["companies"]
            if c["account_id"] == key.get("account_id")
        ]
        return _text({"object": "list", "data": companies, "has_more": False, "next_cursor": None})
    if name == "list_ads":
        return _text({"object": "list", "data": [{"id": "ad_stub0000000000000001", "object": "ad", "name": "Stub ad"}]})
    if name in AREAS:
        return _text({"object": "list", "data": [], "has_more": False, "next_cursor": None})
    if name in WRITE_TOOLS and not {"write", "admin"} & set(key.get("scopes", [])):
        return _text({"error": "this key has no write scope"}, is_error=True)
    if name == "prepare_ad_change":
        change_id = "chg_" + secrets.token_hex(8)
        PENDING[change_id] = {"ad_id": args.get("ad_id"), "changes": args.get("changes")}
        return _text({"change_id": change_id, "status": "pending_confirmation", "preview": PENDING[change_id]})
    if name == "confirm_change":
        change = PENDING.pop(str(args.get("change_id")), None)
        if change is None:
            return _text({"error": "unknown or already used change_id"}, is_error=True)
        return _text({"status": "applied", "ad": {"id": change["ad_id"], **(change["changes"] or {})}})
    raise ValueError(f"unknown tool {name}")


class RequireHeaders:
    """Refuses any request to /mcp without a known key and its matching client id (as the real server must)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/mcp"):
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            auth = headers.get("authorization", "")
            key = KEYS.get(auth[7:]) if auth.lower().startswith("bearer ") else None
            if key is None or key["status"] != "active" or headers.get("x-service-client-id") != key["client_id"]:
                response = JSONResponse({"error": "unauthenticated"}, status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()

    server = Server("signage-stub", version="0.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for host in hosts for h in (host, host + ":*")],
        allowed_origins=[o for host in hosts for o in ("http://" + host, "http://" + host + ":*")],
    )
    app = RequireHeaders(server.streamable_http_app(transport_security=security))

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    print(f"stub listening on http://127.0.0.1:{port} (MCP at http://127.0.0.1:{port}/mcp)", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()

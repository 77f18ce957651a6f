"""Drives the signage MCP server with the official Python MCP client (PyPI `mcp`, pinned in requirements.txt).

Each check prints one line, `PASS <name>` or `FAIL <name>: <why>`; run.sh counts them.
The exit code is 1 when any check failed.

    python mcp_python_check.py --url http://127.0.0.1:PORT/mcp --mode auto
    python mcp_python_check.py --url http://127.0.0.1:PORT/mcp --mode legacy

`--mode auto` is the client's default: it probes `server/discover` (protocol 2026-07-28,
stateless, no session) and falls back to `initialize` only when the server does not speak
that revision. Our server claims 2026-07-28, so auto mode must end on 2026-07-28 without
any `initialize`. `--mode legacy` forces the initialize handshake (streamable HTTP with
`Mcp-Session-Id`), which must negotiate 2025-11-25 and hand out a session id.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
import mcp.types as mcp_types_v

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = {k["name"]: k for k in json.loads((REPO / "fixtures" / "demo-credentials.json").read_text())["keys"]}

AREAS = {
    "companies": ("company", "companies"),
    "branding": ("branding", "brand"),
    "devices": ("device", "devices"),
    "ads": ("ad", "ads"),
    "promotions": ("promotion", "promotions"),
    "plans": ("plan", "plans"),
    "tokens": ("token", "tokens"),
    "invoices": ("invoice", "invoices"),
    "media": ("media",),
    "webhooks": ("webhook", "webhooks"),
}
# A tool whose name starts with one of these verbs changes something (or stages a change).
WRITE_VERBS = (
    "prepare",
    "confirm",
    "activate",
    "deactivate",
    "create",
    "update",
    "delete",
    "set",
    "assign",
    "unassign",
    "cancel",
    "rotate",
    "revoke",
)


class Recorder:
    """Keeps what went over the wire, so a check can say which era the client actually used."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str | None]] = []  # (http method, mcp method or "", status)
        self.session_ids: set[str] = set()
        self.statuses: list[int] = []

    async def on_request(self, request: httpx2.Request) -> None:
        method = ""
        if request.method == "POST":
            try:
                method = json.loads(request.content or b"{}").get("method", "") or ""
            except (ValueError, AttributeError):
                method = "?"
        self.requests.append((request.method, method, None))

    async def on_response(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)
        sid = response.headers.get("mcp-session-id")
        if sid:
            self.session_ids.add(sid)

    def mcp_methods(self) -> list[str]:
        return [m for verb, m, _ in self.requests if verb == "POST" and m]


def http_client(key_name: str | None, recorder: Recorder, client_id: str | None = None) -> httpx2.AsyncClient:
    headers: dict[str, str] = {}
    if key_name is not None:
        key = CREDENTIALS[key_name]
        headers["Authorization"] = f"Bearer {key['rawKey']}"
        headers["X-Service-Client-Id"] = client_id if client_id is not None else key["client_id"]
    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=60.0),
        event_hooks={"request": [recorder.on_request], "response": [recorder.on_response]},
    )


class Checks:
    def __init__(self, label: str) -> None:
        self.label = label
        self.passed = 0
        self.failed = 0

    def ok(self, name: str, detail: str = "") -> None:
        self.passed += 1
        print(f"PASS {self.label}: {name}{' (' + detail + ')' if detail else ''}", flush=True)

    def fail(self, name: str, why: str) -> None:
        self.failed += 1
        print(f"FAIL {self.label}: {name}: {why}", flush=True)

    async def run(self, name: str, body: Callable[[], Awaitable[str | None]]) -> bool:
        try:
            with anyio.fail_after(90):
                detail = await body()
        except AssertionError as e:
            self.fail(name, str(e) or "assertion failed")
            return False
        except Exception as e:  # noqa: BLE001 - any client error is this check's failure
            self.fail(name, describe(e))
            return False
        self.ok(name, detail or "")
        return True


def describe(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(x) for x in e.exceptions)
    text = f"{type(e).__name__}: {e}"
    return text.replace("\n", " ")[:600]


def payload(result: CallToolResult) -> Any:
    """The tool's answer as data: structuredContent, else the first text block parsed as JSON, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    if not texts:
        return None
    try:
        return json.loads(texts[0])
    except ValueError:
        return "\n".join(texts)


def result_text(result: CallToolResult) -> str:
    parts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def find_key(value: Any, names: set[str]) -> Any:
    """First value under any of `names`, searching nested objects and arrays."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in names and v not in (None, ""):
                return v
        for v in value.values():
            found = find_key(v, names)
            if found is not None:
                return found
    elif isinstance(value, list):
        for v in value:
            found = find_key(v, names)
            if found is not None:
                return found
    return None


def find_ids(value: Any, prefix: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        v = value.get("id")
        if isinstance(v, str) and v.startswith(prefix):
            found.append(v)
        for v in value.values():
            found.extend(find_ids(v, prefix))
    elif isinstance(value, list):
        for v in value:
            found.extend(find_ids(v, prefix))
    return found


def name_words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def is_write_tool(tool: Any) -> bool:
    annotations = tool.annotations
    if annotations is not None and annotations.read_only_hint is False:
        return True
    words = name_words(tool.name)
    return bool(words) and words[0] in WRITE_VERBS


def call_ok(result: CallToolResult, what: str) -> Any:
    assert not result.is_error, f"{what} returned isError: {result_text(result)[:400]}"
    return payload(result)


async def session_checks(checks: Checks, url: str, mode: str) -> None:
    expected_version = "2026-07-28" if mode == "auto" else "2025-11-25"
    recorder = Recorder()
    connected = False
    try:
        async with http_client("northwind-readwrite", recorder) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                connected = True
                methods = recorder.mcp_methods()
                if mode == "auto":
                    if (
                        client.protocol_version == expected_version
                        and methods[:1] == ["server/discover"]
                        and "initialize" not in methods
                    ):
                        checks.ok("connect: server/discover negotiated 2026-07-28, no initialize")
                    else:
                        checks.fail(
                            "connect: server/discover negotiated 2026-07-28, no initialize",
                            f"negotiated {client.protocol_version!r}; methods sent: {methods}",
                        )
                else:
                    if client.protocol_version == expected_version and "initialize" in methods and recorder.session_ids:
                        checks.ok("connect: initialize handshake with Mcp-Session-Id", f"version {client.protocol_version}")
                    else:
                        checks.fail(
                            "connect: initialize handshake with Mcp-Session-Id",
                            f"negotiated {client.protocol_version!r}; methods sent: {methods}; "
                            f"session ids seen: {sorted(recorder.session_ids)}",
                        )
                await tool_checks(checks, client, write=True)
    except Exception as e:  # noqa: BLE001 - reported as a failed check, the run goes on
        checks.fail("session with northwind-readwrite" if connected else "connect with northwind-readwrite", describe(e))

    recorder = Recorder()
    async with http_client("northwind-readonly", recorder) as http:

        async def readonly() -> str:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                tools = (await client.list_tools()).tools
                names = sorted(t.name for t in tools)
                writes = [t.name for t in tools if is_write_tool(t)]
                assert "service_health_check" in names, f"service_health_check missing: {names}"
                assert not writes, f"a read-only key is offered write tools: {writes}"
                result = await client.call_tool("get_api_key_permissions", {})
                text = result_text(result)
                assert not result.is_error, f"isError: {text[:300]}"
                assert "read" in text and '"write"' not in text, f"expected only read scope: {text[:300]}"
                assert await refused(
                    client, "prepare_ad_change", {"ad_id": "ad_0000000000000000000000", "changes": {"name": "x"}}
                ), "a read-only key could call prepare_ad_change"
                return f"{len(names)} tools, none of them writes; prepare_ad_change refused"

        await checks.run("northwind-readonly: no write tools listed, read-only scopes, write call refused", readonly)

    async def unauthenticated(key: str | None, client_id: str | None) -> str:
        recorder = Recorder()
        async with http_client(key, recorder, client_id=client_id) as http:
            try:
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    await client.list_tools()
            except Exception as e:  # noqa: BLE001 - the refusal surfaces as some client error
                statuses = sorted(set(recorder.statuses))
                assert statuses and all(s in (401, 403) for s in statuses), (
                    f"client failed ({describe(e)[:200]}) but the HTTP statuses were {statuses}, expected only 401/403"
                )
                return f"HTTP {statuses}"
            raise AssertionError("the client connected and listed tools without valid credentials")

    await checks.run("no Authorization / X-Service-Client-Id: refused", lambda: unauthenticated(None, None))
    await checks.run(
        "key with another client's X-Service-Client-Id: refused",
        lambda: unauthenticated("northwind-readwrite", CREDENTIALS["northwind-readonly"]["client_id"]),
    )


async def tool_checks(checks: Checks, client: Client, write: bool) -> None:
    tools: dict[str, Any] = {}
    raw_key = CREDENTIALS["northwind-readwrite"]["rawKey"]

    async def list_tools() -> str:
        listing = await client.list_tools()
        tools.update({t.name: t for t in listing.tools})
        cursor = listing.next_cursor
        pages = 1
        while cursor is not None and pages < 20:
            listing = await client.list_tools(cursor=cursor)
            tools.update({t.name: t for t in listing.tools})
            cursor = listing.next_cursor
            pages += 1
        names = sorted(tools)
        assert "service_health_check" in tools, f"service_health_check missing from {names}"
        missing = [
            area for area, words in AREAS.items() if not any(set(words) & set(name_words(n)) for n in names)
        ]
        assert not missing, f"no tool for {missing}; tools: {names}"
        for t in tools.values():
            assert t.description, f"tool {t.name} has no description"
            assert t.input_schema.get("type") == "object", f"tool {t.name} inputSchema is not an object schema"
        if write:
            for needed in ("prepare_ad_change", "confirm_change"):
                assert needed in tools, f"{needed} missing for a read/write key; tools: {names}"
        return f"{len(names)} tools"

    if not await checks.run("tools/list covers every area and has service_health_check", list_tools):
        return

    async def health() -> str:
        data = call_ok(await client.call_tool("service_health_check", {}), "service_health_check")
        ok = find_key(data, {"ok", "healthy", "status"})
        assert ok in (True, "ok", "healthy"), f"health payload does not say ok: {json.dumps(data)[:300]}"
        return json.dumps(data)[:120]

    await checks.run("call service_health_check", health)

    async def permissions() -> str:
        result = await client.call_tool("get_api_key_permissions", {})
        data = call_ok(result, "get_api_key_permissions")
        text = result_text(result)
        assert '"write"' in text or "write" in json.dumps(data), f"scopes of the readwrite key not shown: {text[:300]}"
        assert raw_key not in text, "the raw API key appears in the tool result (must be redacted)"
        return json.dumps(data)[:160]

    await checks.run("call get_api_key_permissions (scopes shown, key redacted)", permissions)

    async def companies() -> str:
        result = await client.call_tool("list_companies", {})
        call_ok(result, "list_companies")
        text = result_text(result)
        for name in ("Northwind Grocers", "Northwind Pharmacy"):
            assert name in text, f"{name} missing from list_companies: {text[:300]}"
        for name in ("Harborview Hotels", "Bluefin"):
            assert name not in text, f"another account's company {name} is visible: {text[:300]}"
        return "Northwind Grocers and Northwind Pharmacy, no Harborview"

    await checks.run("call list_companies", companies)

    if write and "prepare_ad_change" in tools and "confirm_change" in tools:
        await checks.run("write flow: prepare_ad_change then confirm_change", lambda: write_flow(client, tools))

    await checks.run("prompts/list and prompts/get with arguments", lambda: prompt_checks(client, tools))


# The prompts of issue 12 and the tool each must send the assistant to first.
PROMPTS = {
    "triage_offline_screens": "get_fleet_health",
    "activate_promotion_safely": "get_promotion",
    "monthly_token_billing_report": "get_token_summary",
}


async def prompt_checks(client: Client, tools: dict[str, Any]) -> str:
    listing = await client.list_prompts()
    prompts = {p.name: p for p in listing.prompts}
    assert set(PROMPTS) <= set(prompts), f"prompts/list: {sorted(prompts)}"
    for p in prompts.values():
        assert p.description, f"prompt {p.name} has no description"
    company = (await first_ids(client, "list_companies", "cmp_"))[0]
    promotion = (await first_ids(client, "list_promotions", "promo_"))[0]
    for name, first_tool in PROMPTS.items():
        arguments = {"promotion_id": promotion} if name == "activate_promotion_safely" else {"company_id": company}
        got = await client.get_prompt(name, arguments)
        assert got.messages, f"{name}: no messages"
        text = got.messages[0].content.text
        value = next(iter(arguments.values()))
        assert value in text, f"{name}: argument {value} not in the text: {text[:200]}"
        assert first_tool in text, f"{name}: {first_tool} not named: {text[:200]}"
        named = [w for w in re.findall(r"[a-z_]+", text) if w in tools or w.startswith(("prepare_", "get_", "list_"))]
        unknown = [w for w in named if w not in tools]
        assert not unknown, f"{name} names tools this key cannot call: {unknown}"
    try:
        await client.get_prompt("triage_offline_screens", {})
    except MCPError as e:
        assert e.code == -32602, f"missing argument: error {e.code}, expected -32602"
    else:
        raise AssertionError("prompts/get without the required argument succeeded")
    return f"{len(prompts)} prompts, each fetched with its argument"


async def first_ids(client: Client, tool: str, prefix: str) -> list[str]:
    data = call_ok(await client.call_tool(tool, {}), tool)
    ids = find_ids(data, prefix)
    assert ids, f"{tool} returned no {prefix} ids"
    return ids


async def write_flow(client: Client, tools: dict[str, Any]) -> str:
    ad_id = await first_ad_id(client, tools)
    prepare = tools["prepare_ad_change"].input_schema
    props: dict[str, Any] = prepare.get("properties", {})
    new_name = "Client check " + str(anyio.current_time())[-6:]
    args: dict[str, Any] = {}
    for name in props:
        if name in ("ad_id", "id", "ad"):
            args[name] = ad_id
    assert args, f"prepare_ad_change takes no ad id property: {json.dumps(prepare)[:300]}"
    if "changes" in props:
        args["changes"] = {"name": new_name}
    elif "patch" in props:
        args["patch"] = {"name": new_name}
    elif "name" in props:
        args["name"] = new_name
    else:
        raise AssertionError(f"cannot tell how to pass a new ad name to prepare_ad_change: {json.dumps(prepare)[:300]}")

    preview = await client.call_tool("prepare_ad_change", args)
    preview_data = call_ok(preview, "prepare_ad_change")
    before = await ad_name(client, tools, ad_id)
    assert before != new_name, "prepare_ad_change already applied the change (a preview must not execute anything)"

    confirm = tools["confirm_change"].input_schema
    confirm_args: dict[str, Any] = {}
    for name in confirm.get("required", []):
        spec = confirm.get("properties", {}).get(name, {})
        if spec.get("type") == "boolean":
            confirm_args[name] = True
            continue
        value = find_key(preview_data, {name})
        assert value is not None, f"preview has no {name!r} for confirm_change: {json.dumps(preview_data)[:300]}"
        confirm_args[name] = value
    done = await client.call_tool("confirm_change", confirm_args)
    call_ok(done, "confirm_change")
    after = await ad_name(client, tools, ad_id)
    if after is not None:
        assert after == new_name, f"after confirm_change the ad is named {after!r}, expected {new_name!r}"

    assert await refused(client, "confirm_change", confirm_args), (
        "confirming the same change twice succeeded (a confirmation must be single-use)"
    )
    return f"{ad_id} renamed" + ("" if after is not None else " (no get_ad tool to read it back)")


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> bool:
    """True when the server turns the call down, as an isError result or as a JSON-RPC error."""
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError:
        return True
    return bool(result.is_error)


async def first_ad_id(client: Client, tools: dict[str, Any]) -> str:
    for name in ("list_ads", "search_ads", "get_ads"):
        if name in tools:
            data = call_ok(await client.call_tool(name, {}), name)
            ids = find_ids(data, "ad_")
            assert ids, f"{name} returned no ad ids: {json.dumps(data)[:300]}"
            return ids[0]
    raise AssertionError(f"no tool lists ads: {sorted(tools)}")


async def ad_name(client: Client, tools: dict[str, Any], ad_id: str) -> str | None:
    for name in ("get_ad", "get_ad_details"):
        if name in tools:
            schema = tools[name].input_schema.get("properties", {})
            arg = next((p for p in ("ad_id", "id") if p in schema), "ad_id")
            data = call_ok(await client.call_tool(name, {arg: ad_id}), name)
            value = find_key(data, {"name", "title"})
            return value if isinstance(value, str) else None
    return None


async def elicitation_checks(checks: Checks, url: str, mode: str) -> None:
    """Confirmation by elicitation: with an elicitation callback, the server asks the user at
    confirm_change; accept applies the change, decline and cancel do not.

    Legacy mode (2025-11-25): the server sends `elicitation/create` on the call's event stream.
    Auto mode (2026-07-28): the multi round-trip (SEP-2322) — the call answers `input_required`,
    the client's driver runs the same callback and retries with `inputResponses` and the echoed
    `requestState`; the wire must show exactly that, and a replayed state must be refused."""
    for action in ("accept", "decline", "cancel"):
        asked: list[str] = []
        confirms: list[dict[str, Any]] = []

        async def on_elicit(context: Any, params: Any, action: str = action) -> Any:
            asked.append(getattr(params, "message", ""))
            return mcp_types_v.ElicitResult(action=action, content={} if action == "accept" else None)

        async def on_request(request: httpx2.Request) -> None:
            try:
                body = json.loads(request.content or b"{}")
            except ValueError:
                return
            if isinstance(body, dict) and body.get("method") == "tools/call":
                if (body.get("params") or {}).get("name") == "confirm_change":
                    confirms.append(body["params"])

        async def flow(action: str = action) -> str:
            asked.clear()
            confirms.clear()
            async with http_client("northwind-readwrite", Recorder()) as http:
                http.event_hooks["request"].append(on_request)
                async with Client(
                    streamable_http_client(url, http_client=http), mode=mode, elicitation_callback=on_elicit
                ) as client:
                    tools = {t.name: t for t in (await client.list_tools()).tools}
                    assert "confirm_change" in tools and "cancel_change" in tools, "two-step tools not listed"
                    ad_id = await first_ad_id(client, tools)
                    before = await ad_name(client, tools, ad_id)
                    new_name = f"Elicited {action} " + str(anyio.current_time())[-5:]
                    preview = call_ok(
                        await client.call_tool("prepare_ad_change", {"ad_id": ad_id, "changes": {"name": new_name}}),
                        "prepare_ad_change",
                    )
                    done = await client.call_tool("confirm_change", {"confirmation_id": preview["confirmation_id"]})
                    after = await ad_name(client, tools, ad_id)
                    assert len(asked) == 1, f"the user was asked {len(asked)} times"
                    assert ad_id in asked[0] and new_name in asked[0], f"the question does not name the change: {asked[0]!r}"
                    if mode != "legacy":
                        assert len(confirms) == 2, f"expected a call and one retry, saw {len(confirms)} confirm_change calls"
                        first, second = confirms
                        assert "requestState" not in first and "inputResponses" not in first, first
                        state = second.get("requestState")
                        assert isinstance(state, str) and state, f"the retry did not echo requestState: {second}"
                        answer = (second.get("inputResponses") or {}).get("confirm_change") or {}
                        assert answer.get("action") == action, f"the retry carried {answer!r}"
                    if action == "accept":
                        data = call_ok(done, "confirm_change after accept")
                        assert data.get("status") == "applied", f"not applied: {json.dumps(data)[:300]}"
                        assert after == new_name, f"after accept the ad is named {after!r}"
                    else:
                        assert done.is_error, f"{action} still ran the change: {result_text(done)[:300]}"
                        assert after == before, f"after {action} the ad is named {after!r}, was {before!r}"
                        assert "nothing was applied" in result_text(done), result_text(done)[:300]
                    if mode != "legacy":
                        # The same answer and state again (the session API drives one leg by hand).
                        try:
                            replay = await client.session.call_tool(
                                "confirm_change",
                                {"confirmation_id": preview["confirmation_id"]},
                                input_responses=second["inputResponses"],
                                request_state=second["requestState"],
                                allow_input_required=True,
                            )
                        except MCPError as e:
                            assert "requestState" in str(e), f"unclear refusal of a replay: {e}"
                        else:
                            raise AssertionError(f"a replayed requestState was accepted: {replay}")
                        assert await ad_name(client, tools, ad_id) == after, "the replay changed the ad"
                    how = "input_required round trip, " if mode != "legacy" else ""
                    return f"{how}asked once, {action}: {'applied' if action == 'accept' else 'nothing applied'}"

        era = "2026-07-28 input_required" if mode != "legacy" else "2025-11-25 elicitation/create"
        await checks.run(f"elicitation ({era}): confirm_change asks the user, {action}", flow)


# A valid 1x1 PNG: a file given inline to prepare_media_upload.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


async def new_write_checks(checks: Checks, url: str, mode: str) -> None:
    """The two-step writes of issue 30 through this client (no elicitation callback: the assistant
    confirms after showing the preview): a screen, a media file given inline, a test delivery and
    its redelivery. Each preview says the change in words, and the confirmation's result is what it
    previewed (the client validates confirm_change's structured content against its output schema)."""

    async def flow() -> str:
        async with http_client("northwind-readwrite", Recorder()) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                companies = call_ok(await client.call_tool("list_companies", {}), "list_companies")
                grocers = next(c for c in companies["data"] if c["name"] == "Northwind Grocers")

                async def two_steps(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                    preview = call_ok(await client.call_tool(tool, args), tool)
                    assert preview["object"] == "pending_change", f"{tool}: {json.dumps(preview)[:300]}"
                    assert "Northwind Grocers" in preview["summary"], f"{tool}: {preview['summary']}"
                    done = call_ok(
                        await client.call_tool("confirm_change", {"confirmation_id": preview["confirmation_id"]}),
                        f"confirm_change after {tool}",
                    )
                    assert done["status"] == "applied", f"{tool}: {json.dumps(done)[:300]}"
                    result = json.loads(json.dumps(done["result"]))
                    for path in preview["set_at_confirmation"]:
                        # Blank what only the confirmation sets, then the preview is the outcome.
                        node: Any = result
                        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
                        for i, part in enumerate(parts):
                            key: Any = int(part[1:-1]) if part.startswith("[") else part
                            if i == len(parts) - 1:
                                node[key] = None
                            else:
                                node = node[key]
                    assert result == preview["after"], f"{tool}: the preview was not the outcome"
                    return done["result"]

                device = await two_steps(
                    "prepare_device_creation",
                    {"company_id": grocers["id"], "name": "Python check screen", "platform": "android"},
                )
                media = await two_steps(
                    "prepare_media_upload",
                    {"company_id": grocers["id"], "filename": "dot.png", "content_type": "image/png", "content": PNG_1X1},
                )
                assert media["size_bytes"] > 0 and media["content_type"] == "image/png", json.dumps(media)[:300]
                hooks = call_ok(await client.call_tool("list_webhooks", {"company_id": grocers["id"]}), "list_webhooks")
                hook = next(h for h in hooks["data"] if h["enabled"])
                sent = await two_steps("prepare_webhook_test", {"webhook_id": hook["id"]})
                assert sent["event_type"] == "webhook.test" and len(sent["attempts"]) == 1, json.dumps(sent)[:300]
                again = await two_steps(
                    "prepare_webhook_redelivery", {"webhook_id": hook["id"], "delivery_id": sent["id"]}
                )
                assert len(again["attempts"]) == 2, json.dumps(again)[:300]
                return f"screen {device['id']}, media {media['id']}, delivery {sent['id']} sent twice"

    await checks.run("new two-step writes: a screen, an inline media file, a test delivery and its redelivery", flow)


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", choices=("auto", "legacy"), default="auto")
    args = parser.parse_args()
    checks = Checks(f"python mcp {args.mode}")
    try:
        await session_checks(checks, args.url, args.mode)
        await elicitation_checks(checks, args.url, args.mode)
        await new_write_checks(checks, args.url, args.mode)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        checks.fail("harness", describe(e))
    return 1 if checks.failed or not checks.passed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

"""The MCP App preview card (extension io.modelcontextprotocol/ui), in a real browser.

Usage: check_mcp_app.py <signage-binary> <results-dir>

Starts the binary on a free port, then plays the host: a page written for this test implements the
host side of MCP Apps (2026-01-26): it loads the `ui://` view named by the prepare tool's
`_meta.ui.resourceUri` into a sandboxed iframe under the CSP its `_meta.ui.csp` declares, answers
`ui/initialize`, sends the tool input and result, and forwards the view's `tools/call` and
`resources/read` to the signage MCP server over HTTP (through a function Playwright exposes). Checks:
the card renders the change and says it in words (objects and company by name), Confirm executes
exactly once (clicked twice), Cancel executes nothing, a promotion's card shows its QR code, a
purchase's card states the price in currency units and the balance after, the view reports its size
(`ui/notifications/size-changed`) and the host resizes the frame so nothing is clipped, an error card
shows no Confirm or Cancel, a confirmation whose preview went stale shows the fresh preview and
applies only when confirmed again, no CSP violation, and clients without the extension see no
`_meta.ui`. Prints PASS/FAIL lines and `N passed, M failed`.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CREDS = json.loads((REPO / "fixtures" / "demo-credentials.json").read_text())
UI = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")
    sys.stdout.flush()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary):
    port = free_port()
    env = dict(os.environ, SIGNAGE_RATE_LIMIT_PER_SECOND="0")
    proc = subprocess.Popen(
        [binary, "serve", "--port", str(port), "--database", ":memory:"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            return proc, base
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("the server did not start")


class Mcp:
    """A minimal MCP client over Streamable HTTP (2025-11-25, with a session)."""

    def __init__(self, base, key_name, capabilities):
        k = next(k for k in CREDS["keys"] if k["name"] == key_name)
        self.url = base + "/mcp"
        self.headers = {"Authorization": "Bearer " + k["rawKey"], "X-Service-Client-Id": k["client_id"],
                        "Content-Type": "application/json", "Accept": "application/json"}
        self.next_id = 1
        self.calls = []
        init = self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                       "clientInfo": {"name": "browser-host", "version": "1"}})
        self.session = init["_session"]
        self.headers["Mcp-Session-Id"] = self.session
        self.headers["MCP-Protocol-Version"] = "2025-11-25"

    def send(self, method, params):
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        req = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            msg = json.loads(r.read())
            if "result" in msg and isinstance(msg["result"], dict):
                msg["result"]["_session"] = r.headers.get("Mcp-Session-Id")
            return msg

    def rpc(self, method, params):
        msg = self.send(method, params)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def host_call(self, method, params):
        """What the host forwards from the view: the JSON-RPC result or error."""
        if method == "tools/call":
            self.calls.append(params.get("name"))
        msg = self.send(method, params)
        if "result" in msg:
            msg["result"].pop("_session", None)
        return msg


HOST_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Test host</title></head>
<body>
<iframe id="view" sandbox="allow-scripts" style="width: 640px; height: 520px; border: 1px solid #888"></iframe>
<script>
  // The host side of MCP Apps, as small as a test needs.
  window.violations = [];
  window.hostLog = [];
  window.sizes = [];
  const frame = document.getElementById("view");
  function toView(msg) { frame.contentWindow.postMessage(msg, "*"); }
  window.startView = (html, csp, toolInput, toolResult) => {
    const policy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; media-src data:; "
      + "connect-src " + ((csp.connectDomains || []).join(" ") || "'none'") + "; frame-src " + ((csp.frameDomains || []).join(" ") || "'none'")
      + "; base-uri 'none'; object-src 'none'; form-action 'none'";
    const meta = '<meta http-equiv="Content-Security-Policy" content="' + policy + '">';
    window.addEventListener("message", async (event) => {
      if (event.source !== frame.contentWindow) return;
      const m = event.data;
      window.hostLog.push(m.method || ("response " + m.id));
      if (m.method === "ui/initialize") {
        toView({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" },
          hostCapabilities: { serverTools: {}, serverResources: {} }, hostContext: { theme: "light", displayMode: "inline" } } });
      } else if (m.method === "ui/notifications/initialized") {
        toView({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: toolInput } });
        toView({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: toolResult });
      } else if (m.method === "ui/notifications/size-changed") {
        // The host gives the view the height it asks for.
        window.sizes.push(m.params);
        if (m.params && m.params.height) frame.style.height = m.params.height + "px";
      } else if (m.method === "tools/call" || m.method === "resources/read") {
        const answer = await window.mcpCall(m.method, m.params);
        toView(Object.assign({ jsonrpc: "2.0", id: m.id }, answer.error ? { error: answer.error } : { result: answer.result }));
      } else if (m.id !== undefined && m.method) {
        toView({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "not offered by this host" } });
      }
    });
    frame.srcdoc = html.replace("<head>", "<head>" + meta);
  };
</script>
</body></html>"""


def tool(listing, name):
    return next(t for t in listing["tools"] if t["name"] == name)


def open_card(browser, mcp, tool_name, arguments, results, shot, expect_actions=True):
    """A fresh page hosting the view for one prepare call; returns (page, frame, result)."""
    listing = mcp.rpc("tools/list", {})
    uri = tool(listing, tool_name)["_meta"]["ui"]["resourceUri"]
    content = mcp.rpc("resources/read", {"uri": uri})["contents"][0]
    result = mcp.rpc("tools/call", {"name": tool_name, "arguments": arguments})
    result.pop("_session", None)
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.expose_function("mcpCall", mcp.host_call)
    page.set_content(HOST_PAGE)
    page.evaluate("([h, c, i, r]) => window.startView(h, c, i, r)",
                  [content["text"], content["_meta"]["ui"]["csp"], arguments, result])
    frame = page.frame_locator("#view")
    if expect_actions:
        frame.locator("#actions").wait_for(state="visible", timeout=10_000)
    else:
        frame.locator("#status.error").wait_for(timeout=10_000)
    # The host has applied the size the view asked for.
    page.wait_for_function("window.sizes.length > 0", timeout=10_000)
    time.sleep(0.2)
    page.screenshot(path=str(results / shot))
    return page, frame, result, errors


def fits(page):
    """The card's content fits the frame the host sized from `ui/notifications/size-changed`."""
    frame_h = page.evaluate("document.getElementById('view').getBoundingClientRect().height")
    inner = page.frame_locator("#view").locator("html").evaluate("h => h.scrollHeight")
    asked = page.evaluate("window.sizes[window.sizes.length - 1]")
    return asked and asked.get("height", 0) >= inner - 1 and frame_h + 2 >= inner, f"frame {frame_h}, content {inner}, asked {asked}"


def ad_name(mcp, ad_id):
    return mcp.rpc("tools/call", {"name": "get_ad", "arguments": {"ad_id": ad_id}})["structuredContent"]["name"]


def run(base, results):
    plain = Mcp(base, "northwind-readwrite", {})
    listing = plain.rpc("tools/list", {})
    check("clients without the extension see no _meta.ui",
          all("_meta" not in t for t in listing["tools"]), [t["name"] for t in listing["tools"] if "_meta" in t])

    mcp = Mcp(base, "northwind-readwrite", UI)
    listing = mcp.rpc("tools/list", {})
    prepares = [t for t in listing["tools"] if t["name"].startswith("prepare_")]
    check("every prepare tool links the preview view",
          prepares and all(t.get("_meta", {}).get("ui", {}).get("resourceUri") == "ui://signage/change-preview" for t in prepares))
    reads = [t["name"] for t in listing["tools"] if "_meta" in t and not t["name"].startswith("prepare_")]
    check("other tools are unchanged", not reads, reads)
    content = mcp.rpc("resources/read", {"uri": "ui://signage/change-preview"})["contents"][0]
    csp = content["_meta"]["ui"]["csp"]
    check("the view is text/html;profile=mcp-app with a deny-by-default CSP",
          content["mimeType"] == "text/html;profile=mcp-app" and all(not csp.get(k) for k in
          ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")), json.dumps(content["_meta"]))

    ads = mcp.rpc("tools/call", {"name": "list_ads", "arguments": {"limit": 5}})["structuredContent"]["data"]
    ad_id = ads[0]["id"]
    before = ad_name(mcp, ad_id)
    new_headline = "Fresh bread <b>daily</b> from 7"
    new_name = "Card check " + str(int(time.time()))[-5:]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page, frame, result, errors = open_card(
                browser, mcp, "prepare_ad_change",
                {"ad_id": ad_id, "changes": {"name": new_name, "headline": new_headline}}, results, "mcp-app-ad.png")
            screen = frame.locator(".screen .headline").inner_text()
            check("the card renders the ad as the screen would show it", screen == new_headline, screen)
            diff = frame.locator("#diff").inner_text()
            check("the card lists the differences", new_name in diff and "headline" in diff, diff[:300])
            summary = frame.locator("#summary").inner_text()
            check("the card says the change in words, naming the ad and its company",
                  before in summary and "Northwind" in summary and new_name in summary, summary)
            ok, detail = fits(page)
            check("the view reports its size and the frame shows all of it", ok, detail)
            check("tenant text is shown as text, not markup", frame.locator(".screen b").count() == 0)
            mcp.calls.clear()
            frame.locator("#confirm").click()
            frame.locator("#confirm").click(force=True, timeout=2_000)
            frame.locator("#status").filter(has_text="Applied.").wait_for(timeout=10_000)
            time.sleep(0.5)
            check("Confirm executes exactly once", mcp.calls == ["confirm_change"], mcp.calls)
            after = ad_name(mcp, ad_id)
            check("the change is applied", after == new_name, f"{before!r} -> {after!r}")
            violations = page.evaluate("window.hostLog")
            check("the view spoke the handshake first", violations[:2] == ["ui/initialize", "ui/notifications/initialized"], violations)
            check("no console error in the host or the view", not errors, errors)
            page.close()

            # Cancel: nothing runs but cancel_change.
            page, frame, result, errors = open_card(
                browser, mcp, "prepare_ad_change", {"ad_id": ad_id, "changes": {"name": "Should not happen"}},
                results, "mcp-app-cancel.png")
            mcp.calls.clear()
            frame.locator("#cancel").click()
            frame.locator("#status").filter(has_text="Cancelled").wait_for(timeout=10_000)
            check("Cancel calls cancel_change once and changes nothing",
                  mcp.calls == ["cancel_change"] and ad_name(mcp, ad_id) == new_name, mcp.calls)
            page.close()

            # A promotion's card shows its QR code (read through the host as a resource).
            promos = mcp.rpc("tools/call", {"name": "list_promotions", "arguments": {"limit": 50}})["structuredContent"]["data"]
            with_codes = None
            for promo in promos:
                codes = mcp.rpc("tools/call", {"name": "get_promotion_qr_codes", "arguments": {"promotion_id": promo["id"]}})
                if codes["structuredContent"]["data"]:
                    with_codes = promo
                    break
            if with_codes is None:
                check("a promotion's card shows its QR code", False, "no promotion with QR codes")
            else:
                page, frame, result, errors = open_card(
                    browser, mcp, "prepare_promotion_change",
                    {"promotion_id": with_codes["id"], "changes": {"name": with_codes["name"] + " (new)"}},
                    results, "mcp-app-promotion.png")
                img = frame.locator(".qr img")
                img.wait_for(timeout=10_000)
                src = img.get_attribute("src") or ""
                natural = img.evaluate("i => i.complete && i.naturalWidth > 0")
                check("a promotion's card shows its QR code", src.startswith("data:image/svg+xml") and natural, src[:60])
                page.screenshot(path=str(results / "mcp-app-promotion.png"))
                frame.locator("#cancel").click()
                page.close()

            # A purchase: the price in currency units, the invoice and the balance after, in words.
            packs = mcp.rpc("tools/call", {"name": "list_token_packs", "arguments": {}})["structuredContent"]["data"]
            pack = packs[0]
            grocers = next(c for c in mcp.rpc("tools/call", {"name": "list_companies", "arguments": {}})["structuredContent"]["data"]
                           if c["name"] == "Northwind Grocers")
            page, frame, result, errors = open_card(
                browser, mcp, "prepare_token_purchase", {"token_pack_id": pack["id"], "company_id": grocers["id"]},
                results, "mcp-app-purchase.png")
            cost = frame.locator("#cost").inner_text()
            price = f"{pack['price_cents'] / 100:,.2f} {pack['currency']}"
            sc = result["structuredContent"]
            after = f"{sc['cost']['balance_after']:,} tokens"
            check("a purchase's card states the price in currency units and the balance after",
                  price in cost and after in cost and "amount_cents" not in cost and "{" not in cost, cost)
            summary = frame.locator("#summary").inner_text()
            check("a purchase's words name the pack, the company, the price and the balance after",
                  pack["name"] in summary and "Northwind Grocers" in summary and price in summary and after in summary, summary)
            ok, detail = fits(page)
            check("the purchase card is not clipped", ok, detail)
            frame.locator("#cancel").click()
            frame.locator("#status").filter(has_text="Cancelled").wait_for(timeout=10_000)
            page.close()

            # An error card: nothing to confirm, so neither button is shown.
            page, frame, result, errors = open_card(
                browser, mcp, "prepare_ad_change", {"ad_id": ad_id, "changes": {"name": new_name}},
                results, "mcp-app-error.png", expect_actions=False)
            check("an error card shows no Confirm or Cancel",
                  result.get("isError") is True and not frame.locator("#confirm").is_visible()
                  and not frame.locator("#cancel").is_visible(), frame.locator("#status").inner_text())
            page.close()

            # A stale preview: the ad changes on the side; Confirm applies nothing and the card shows
            # the change as it would be now, which a second Confirm applies.
            page, frame, result, errors = open_card(
                browser, mcp, "prepare_ad_change", {"ad_id": ad_id, "changes": {"name": new_name + " (2)"}},
                results, "mcp-app-stale.png")
            side = mcp.rpc("tools/call", {"name": "prepare_ad_change", "arguments": {"ad_id": ad_id, "changes": {"headline": "Changed on the side"}}})
            mcp.rpc("tools/call", {"name": "confirm_change", "arguments": {"confirmation_id": side["structuredContent"]["confirmation_id"]}})
            mcp.calls.clear()
            frame.locator("#confirm").click()
            frame.locator("#status").filter(has_text="Nothing was applied").wait_for(timeout=10_000)
            page.screenshot(path=str(results / "mcp-app-stale-fresh.png"))
            screen = frame.locator(".screen .headline").inner_text()
            check("a stale confirmation applies nothing and shows the change as it would be now",
                  ad_name(mcp, ad_id) == new_name and screen == "Changed on the side", f"{ad_name(mcp, ad_id)!r}, {screen!r}")
            frame.locator("#confirm").click()
            frame.locator("#status").filter(has_text="Applied.").wait_for(timeout=10_000)
            check("the fresh preview is confirmed once the person decides again",
                  ad_name(mcp, ad_id) == new_name + " (2)" and mcp.calls == ["confirm_change", "confirm_change"], mcp.calls)
            page.close()
        finally:
            browser.close()


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    results.mkdir(parents=True, exist_ok=True)
    proc, base = start_server(binary)
    try:
        run(base, results)
    except Exception as e:  # noqa: BLE001 - reported as a failure
        check("mcp app harness", False, repr(e))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

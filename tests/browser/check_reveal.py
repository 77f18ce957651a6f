"""The one-time reveal page of a secret rotated through MCP, in a real browser.

Usage: check_reveal.py <signage-binary> <results-dir>

Starts the binary on a free port, rotates a webhook's secret through MCP (prepare, then
confirm_change, as a client without URL-mode elicitation: the result carries the link), then opens
the link as the person would. Checks: the token leaves the address bar at once; nothing is revealed
before the button is pressed; the page shows the secret (its last four are the webhook's
`secret_last4`) and the grace; it is styled by the console's sheet; no serious or critical
accessibility violation (axe-core); no CSP violation; opening the link again says it was already
opened and shows no secret. Prints PASS/FAIL lines and `N passed, M failed`.
"""

import json
import sys
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

from kit import Rest, axe_check, check, company_id, counts, key, start_server


def mcp_call(base, key_name, tool, args):
    raw, client = key(key_name)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}).encode()
    req = urllib.request.Request(base + "/mcp", data=body, method="POST", headers={
        "Authorization": "Bearer " + raw, "X-Service-Client-Id": client,
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    return text, json.loads(text)["result"]


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    results.mkdir(parents=True, exist_ok=True)
    proc, base = start_server(binary, results / "reveal-server.log")
    try:
        rw = Rest(base, "northwind-readwrite")
        _, hooks = rw.call("GET", f"/webhooks?company_id={company_id('Northwind Grocers')}&limit=1")
        hook = hooks["data"][0]["id"]
        _, preview = mcp_call(base, "northwind-readwrite", "prepare_webhook_secret_rotation", {"webhook_id": hook})
        cid = preview["structuredContent"]["confirmation_id"]
        body, done = mcp_call(base, "northwind-readwrite", "confirm_change", {"confirmation_id": cid})
        url = done["structuredContent"]["withheld"]["reveal"]["url"]
        _, now = rw.call("GET", f"/webhooks/{hook}")
        last4 = now["secret_last4"]
        check("the confirmation gives the assistant a link, not the secret",
              "/console/reveal#" in url and "whsec_" not in body, url)

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            csp = []
            page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None)
            page.goto(url)
            page.wait_for_selector("#reveal-show", state="visible")
            check("the token leaves the address bar at once", "#" not in page.url, page.url)
            check("nothing is revealed before the button is pressed",
                  "whsec_" not in page.content() and not page.is_visible("#reveal-shown"))
            check("the console's styles apply",
                  page.evaluate("getComputedStyle(document.querySelector('#reveal-show')).borderRadius") == "6px")
            page.click("#reveal-show")
            page.wait_for_selector("#reveal-shown", state="visible")
            secret = page.input_value("#reveal-secret")
            check("the page shows the new secret", secret.startswith("whsec_") and secret.endswith(last4),
                  f"{secret[:6]}… vs …{last4}")
            grace = page.inner_text("#reveal-grace")
            check("the page says how long the old secret keeps signing", "24 hours" in grace, grace)
            axe_check(page, "reveal page")
            page.screenshot(path=str(results / "reveal.png"), full_page=True)

            again = browser.new_page()
            again.goto(url)
            again.click("#reveal-show")
            again.wait_for_selector("#reveal-problem", state="visible")
            problem = again.inner_text("#reveal-problem")
            check("a second visit is refused: already opened", "already opened" in problem, problem)
            check("a second visit shows no secret", "whsec_" not in again.content())
            again.screenshot(path=str(results / "reveal-again.png"), full_page=True)
            check("no Content-Security-Policy violation", not csp, "; ".join(csp))
            browser.close()
    finally:
        proc.kill()
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


if __name__ == "__main__":
    main()

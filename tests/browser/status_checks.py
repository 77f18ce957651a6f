"""Honest status, checked in the browser: an injected 503 marks the fleet's data stale with
"connection lost — showing data from HH:MM" (and clears when the service answers again); an
injected 429 waits for its Retry-After and says so; a key revoked while the console shows it goes
back to sign-in with the reason."""

import time

from kit import Rest, check, sign_in, wait_until


def honest_status(page, base, browser, grocers, results):
    operator = Rest(base, "sandbox-operator")
    admin = Rest(base, "northwind-admin")
    sign_in(page, base, "northwind-readwrite")
    page.goto(f"{base}/console#/company/{grocers}/fleet")
    page.wait_for_selector("button.tile")

    # The presenter's outage: the Sandbox view's button, in the operator's own tab.
    control = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    sign_in(control, base, "sandbox-operator")
    control.wait_for_selector("[data-now]")
    control.click("text=Outage: GET /devices answers 503")
    control.wait_for_selector("ul.faults li")
    faults = operator.call("GET", "/_sandbox/faults")[1]["data"]
    check("the Sandbox view's outage button injects a 503 on GET /devices",
          len(faults) == 1 and faults[0]["match"]["path"] == "/devices" and faults[0]["action"]["status"] == 503, str(faults))
    check("…and lists the rule in words", "GET /devices → 503" in control.inner_text("ul.faults"), control.inner_text("ul.faults"))
    lost = wait_until(page, "document.body.dataset.connection === 'lost'", 12)
    banner = page.inner_text("#notices") if lost else ""
    check("polling fails: 'connection lost — showing data from HH:MM', the tiles kept and marked stale",
          lost and "Connection lost — showing data from" in banner and page.eval_on_selector_all("#view.stale button.tile", "e => e.length") > 0,
          banner)
    page.screenshot(path=str(results / "status-connection-lost-1440.png"))
    shown = page.inner_text("#notices")
    # Both in the company's time zone, naming it: "2026-12-07 15:11 CET".
    header = page.inner_text("#sandbox-time time")
    check("the outage banner gives the sandbox's time, as the header does",
          "(sandbox time)" in shown and header[11:13] in shown and header.split()[-1] in shown,
          f"{shown} / header {header}")
    # Opening Fleet while the outage lasts: a banner and a wait, not "Something went wrong" for good.
    fresh_tab = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    sign_in(fresh_tab, base, "northwind-readwrite")
    fresh_tab.goto(f"{base}/console#/company/{grocers}/fleet")
    fresh_tab.wait_for_selector("#view[data-ready] h1")
    waiting = wait_until(fresh_tab, "document.body.dataset.connection === 'lost'", 10)
    fresh_tab.screenshot(path=str(results / "status-fleet-opened-during-outage-1440.png"))
    check("opening Fleet during an outage says it waits for the sandbox (no 'Something went wrong')",
          waiting and fresh_tab.is_visible("#view [data-waiting]") and "Something went wrong" not in fresh_tab.inner_text("#view")
          and "Connection lost" in fresh_tab.inner_text("#notices"),
          fresh_tab.inner_text("#main")[:300])
    control.click("ul.faults li button:text-is('Remove')")
    control.wait_for_selector("text=No fault rules.")
    control.context.close()
    back = wait_until(page, "document.body.dataset.connection === 'ok' && !document.getElementById('connection')", 12)
    check("…and the banner goes once the service answers again", back, page.inner_text("#notices"))
    loaded = wait_until(fresh_tab, "document.querySelectorAll('button.tile').length > 0 && document.body.dataset.connection === 'ok'", 15)
    check("…and the Fleet opened during the outage loads by itself once it ends", loaded, fresh_tab.inner_text("body")[:300])
    fresh_tab.context.close()

    status, fault = operator.call("POST", "/_sandbox/faults", {
        "match": {"method": "GET", "path": "/devices"}, "times": 1,
        "action": {"type": "status", "status": 429, "retry_after": 2}})
    check("a 429 fault with Retry-After: 2 is injected", status == 201, str(fault))
    said = wait_until(page, "(document.getElementById('rate-limit') || {}).textContent?.includes('waiting 2 s')", 12)
    check("a 429 waits for Retry-After and says so", said, page.inner_text("#notices"))
    if said:
        page.screenshot(path=str(results / "status-rate-limited-1440.png"))
    recovered = wait_until(page, "!document.getElementById('rate-limit') && document.body.dataset.connection === 'ok'", 12)
    check("…then refreshes again, never 'Something went wrong'", recovered and "Something went wrong" not in page.inner_text("#view h1"))

    # A key revoked while the console shows its data: back to sign-in, saying why.
    client = next(c for c in admin.all("/api-clients") if c["id"] == Rest(base, "northwind-readwrite").client)
    status, made = admin.call("POST", "/api-keys", {"client_id": client["id"], "name": "Browser revoke check", "scopes": ["read"]})
    check("a key to revoke is made over REST", status == 201, str(made))
    page.evaluate("sessionStorage.clear()")
    page.goto(base + "/console")
    page.fill("#key-input", made["rawKey"])
    page.fill("#client-input", client["id"])
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#view h1")
    page.goto(f"{base}/console#/company/{grocers}/fleet")
    page.wait_for_selector("button.tile")
    status, _ = admin.call("POST", f"/api-keys/{made['id']}/revoke")
    check("the key is revoked over REST", status == 200)
    out = wait_until(page, "!document.getElementById('signin').hidden", 12)
    reason = page.inner_text("#signin-error") if out else ""
    check("a 401 goes back to sign-in with the reason", out and "signed out" in reason and "401" in reason, reason)
    check("…with the reason above the forms, and no company's branding left in the header",
          page.evaluate("document.getElementById('signin-error').compareDocumentPosition(document.getElementById('key-form')) & Node.DOCUMENT_POSITION_FOLLOWING")
          and page.inner_text("#brand") == "signage", page.inner_text("#brand"))
    page.screenshot(path=str(results / "status-signed-out-1440.png"))
    time.sleep(0.2)

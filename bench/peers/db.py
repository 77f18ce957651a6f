#!/usr/bin/env python3
"""Writes the peers' data (bench/peers, json-server's db.json) from a running signage's own answers:
every company and every device demo key `northwind-readonly` sees, newest first, as signage shows
them. The peers then serve the same rows, the same bytes per row.

    python3 bench/peers/db.py PORT OUT.json
"""

import http.client
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(port, out):
    creds = json.load(open(os.path.join(HERE, "..", "..", "fixtures", "demo-credentials.json")))
    k = next(k for k in creds["keys"] if k["name"] == "northwind-readonly")
    headers = {"X-API-KEY": k["rawKey"], "X-Service-Client-Id": k["client_id"]}
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)

    def every(path):
        rows, cursor = [], None
        while True:
            q = f"{path}?limit=100" + (f"&cursor={cursor}" if cursor else "")
            conn.request("GET", q, headers=headers)
            resp = conn.getresponse()
            page = json.loads(resp.read())
            if resp.status != 200:
                raise SystemExit(f"{q}: HTTP {resp.status}: {page}")
            rows += page["data"]
            cursor = page["next_cursor"]
            if not cursor:
                return rows

    # `health`: json-server answers GET /health with it, which is how the benchmark waits for it.
    db = {"companies": every("/companies"), "devices": every("/devices"), "health": {"ok": True}}
    with open(out, "w") as f:
        json.dump(db, f)
    print(json.dumps({"companies": len(db["companies"]), "devices": len(db["devices"])}))


if __name__ == "__main__":
    main(*sys.argv[1:3])

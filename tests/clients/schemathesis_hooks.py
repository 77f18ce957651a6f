"""Schemathesis hooks (loaded through SCHEMATHESIS_HOOKS by schemathesis.sh).

A list's `cursor` may carry the tag of the filters of the page that made it (`plan_….AbCdEf12`,
`52.AbCdEf12`): a value the server hands out, like an ETag, which no schema can describe. A tag
drawn at random names filters nobody asked for, and the server rightly refuses it with 400
`cursor_mismatch` (tests/api test that). So a generated tagged cursor keeps only its bound, which
the server takes without filters; everything else about the cursor is still generated.
"""

import re

import schemathesis

TAGGED = re.compile(r"^([a-z]+_[0-9A-Za-z]{1,64}|[0-9]{1,18})\.[0-9A-Za-z]{8}$")


@schemathesis.hook
def map_query(ctx, query):
    if query and isinstance(query.get("cursor"), str):
        m = TAGGED.match(query["cursor"])
        if m:
            query["cursor"] = m.group(1)
    return query

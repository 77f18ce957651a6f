-- Who caused each domain event, and through which door: the events feed shows "what changed, by
-- which key, via REST or MCP". `actor` is the key or user id (never a secret); `via` is `rest`,
-- `mcp` or `sandbox` (the clock, the simulated fleet). Rows before this migration have neither.
ALTER TABLE events ADD COLUMN actor TEXT;
ALTER TABLE events ADD COLUMN via TEXT;

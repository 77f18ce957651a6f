-- Two-step writes of the MCP server. A prepare_* tool stores the exact change here and returns a
-- preview with a confirmation id; confirm_change runs it once. Only the SHA-256 of the confirmation
-- id is kept, so the table alone cannot be used to confirm anything.
CREATE TABLE mcp_pending_changes (
    id_hash      TEXT PRIMARY KEY,
    actor        TEXT NOT NULL,              -- key_... or usr_... that prepared the change
    client_id    TEXT,                       -- that key's API client (NULL for a login token)
    tool         TEXT NOT NULL,
    arguments    TEXT NOT NULL,              -- the exact tool arguments, JSON
    operation    TEXT NOT NULL,              -- REST operation id of the change
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    read_path    TEXT NOT NULL,              -- GET path of the target
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    body         TEXT,                       -- JSON body of the change request, if any
    version      TEXT NOT NULL,              -- ETag (or body fingerprint) of the previewed target
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER,                    -- set once: confirmed or cancelled
    outcome      TEXT                        -- confirming, applied, stale, refused, cancelled
) WITHOUT ROWID;
CREATE INDEX mcp_pending_changes_by_expiry ON mcp_pending_changes(expires_at);

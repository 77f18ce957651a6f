-- Issue 48: the events page copies an event's data as stored without reading it first.
--
-- An event's `payload` is copied into the page as it is when it is byte for byte what parsing and
-- writing it again would give (compact, `serde_json`'s escapes, integers only, no key twice); the
-- page checked that on every read, about half of the page's instructions. An event is written once
-- and never changes, so the verdict is taken once, by the one writer of events, and kept here: 1
-- copy as stored, 0 parse and write again. NULL is an event recorded before this column (nothing
-- here can tell that verdict in SQL): the page checks it as before.
--
-- A row said canonical always holds valid JSON text, whatever wrote it: a wrong flag can change how
-- an event's data is spelled on the page (a debug build refuses the page), never make it invalid
-- JSON.
ALTER TABLE events ADD COLUMN payload_canonical INTEGER
    CHECK (payload_canonical IN (0, 1) AND (payload_canonical = 0 OR json_valid(payload)));

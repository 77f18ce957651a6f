-- Issue 33: a scan's insert without a temporary b-tree.
--
-- `CHECK (agent_class IN ('ios', 'android', 'desktop', 'bot', 'other'))` makes SQLite build a
-- temporary b-tree of the five values for every row it inserts (a table constraint's IN list of
-- more than two constants is never kept across rows): six b-tree writes beside the row's own five,
-- for each of the demo history's ~3,800 scans and every simulated one. The same rule written as
-- equalities is plain comparisons. qr_scans and qr_scan_counts are rebuilt with it (SQLite cannot
-- change a CHECK in place); every row, id and rowid is kept, and so is every index.
CREATE TABLE qr_scans_v35 (
    id           TEXT PRIMARY KEY,
    qr_code_id   TEXT NOT NULL REFERENCES qr_codes(id) ON DELETE CASCADE,
    scanned_at   INTEGER NOT NULL,
    agent_class  TEXT NOT NULL CHECK (agent_class = 'ios' OR agent_class = 'android'
                                      OR agent_class = 'desktop' OR agent_class = 'bot'
                                      OR agent_class = 'other')
);
INSERT INTO qr_scans_v35 (rowid, id, qr_code_id, scanned_at, agent_class)
    SELECT rowid, id, qr_code_id, scanned_at, agent_class FROM qr_scans ORDER BY rowid;
DROP TABLE qr_scans;
ALTER TABLE qr_scans_v35 RENAME TO qr_scans;
CREATE INDEX qr_scans_by_code ON qr_scans(qr_code_id, id);
CREATE INDEX qr_scans_by_code_time ON qr_scans(qr_code_id, scanned_at);
CREATE INDEX qr_scans_by_time ON qr_scans(scanned_at);

CREATE TABLE qr_scan_counts_v35 (
    qr_code_id   TEXT NOT NULL REFERENCES qr_codes(id) ON DELETE CASCADE,
    minute       INTEGER NOT NULL,           -- scanned_at / 60 (sandbox clock)
    agent_class  TEXT NOT NULL CHECK (agent_class = 'ios' OR agent_class = 'android'
                                      OR agent_class = 'desktop' OR agent_class = 'bot'
                                      OR agent_class = 'other'),
    scans        INTEGER NOT NULL CHECK (scans > 0),
    PRIMARY KEY (qr_code_id, minute, agent_class)
) WITHOUT ROWID;
INSERT INTO qr_scan_counts_v35 (qr_code_id, minute, agent_class, scans)
    SELECT qr_code_id, minute, agent_class, scans FROM qr_scan_counts;
DROP TABLE qr_scan_counts;
ALTER TABLE qr_scan_counts_v35 RENAME TO qr_scan_counts;
CREATE INDEX qr_scan_counts_by_minute ON qr_scan_counts(minute);

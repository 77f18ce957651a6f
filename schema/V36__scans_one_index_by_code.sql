-- One index of a code's scans instead of two: (qr_code_id, id, scanned_at) replaces
-- (qr_code_id, id) and (qr_code_id, scanned_at).
--
-- Every scan row went into five b-trees; the two led by the code were the costliest of them (a
-- scan is appended at the end of its code's range, so with codes interleaved in time every
-- insert searches by string and splits pages in the middle of the index). The demo history
-- writes ~3,800 scans at each start: the second index was ~14 M instructions of it.
--
-- What each query of scans reads now (EXPLAIN QUERY PLAN):
-- - a code's scans list (keyset on id, newest first): the (qr_code_id, id) prefix, as before;
-- - a window of a code's scans (the ranking, the report's days, the history's recount): the
--   code's entries in this index, scanned_at read from the index itself (covering), so at most
--   `scans.detail_per_code` entries of one code (1000 by default; past it scans are counters);
-- - retention's oldest scans: qr_scans_by_time, unchanged.
-- Rows, ids and rowids are untouched.
DROP INDEX qr_scans_by_code_time;
DROP INDEX qr_scans_by_code;
CREATE INDEX qr_scans_by_code ON qr_scans(qr_code_id, id, scanned_at);

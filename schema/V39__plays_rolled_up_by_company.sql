-- Issue 33: one b-tree less for every play row.
--
-- playbacks_by_started (started_at) served one query only: retention's roll-up by age, which took
-- the oldest plays of every company together. It now walks company by company, each a range of
-- playbacks_by_company_started (company_id, started_at), as the roll-up by rows per company always
-- did; reports read that index too. The simulated fleet writes ~940 play rows per simulated day,
-- and this index was a b-tree write for each.
DROP INDEX playbacks_by_started;

-- One index of an ad's plays instead of two: (ad_id, device_id, id) replaces
-- playbacks_by_ad (ad_id) and playbacks_by_device_ad (device_id, ad_id, id).
--
-- Every play row went into eight b-trees (the table, its id and six indexes); the simulated fleet
-- writes ~940 hourly rows per simulated day, and each index was about a tenth of that write.
-- The two indexes named the same two columns in a different order, and every query that read
-- either gives both columns by equality or only the ad:
-- - a screen's plays of one ad (`GET /devices/{id}/playbacks?ad_id=…`, keyset on id, newest
--   first): `ad_id = ? AND device_id = ? AND id < ?` in this index, as it was in
--   (device_id, ad_id, id) (equalities in either order, then the id range);
-- - an ad's deletion (its plays go with it, ON DELETE CASCADE): the `ad_id` prefix of this index,
--   as it was the whole of playbacks_by_ad, covering.
-- A screen's plays of every ad keep playbacks_by_device (device_id, id); reports and retention
-- keep playbacks_by_company_started and playbacks_by_started; the fleet's hourly slot keeps
-- playbacks_simulated_slot. Rows, ids and rowids are untouched.
DROP INDEX playbacks_by_ad;
DROP INDEX playbacks_by_device_ad;
CREATE INDEX playbacks_by_ad_device ON playbacks(ad_id, device_id, id);

-- Issue 48: a play row rolled up is deleted, nothing more; its day's sums are already kept.
--
-- Since V43 the daily roll-up (playback_days) holds, for every company, UTC day, screen and ad,
-- the sums of that day's play rows and of its daily total (playback_daily_totals). Retention's
-- roll-up moved each old play row's sums into the daily total, which left the roll-up's row as it
-- was: the totals table was a second copy of sums the roll-up already held, written a second time
-- for every play row (a group, a sort and an upsert: about half of the roll-up's cost). Now the
-- roll-up row is the only home of a day's sums: rolling plays up deletes them, and the age limit
-- (`retention.daily_totals_days`) deletes old roll-up rows. The proof-of-play report counts a
-- partial last day as its roll-up row less the day's play rows after the range's end, which is
-- what the play rows in the range and the day's total summed to.
DROP TRIGGER playback_days_total_deleted;
DROP TABLE playback_daily_totals;

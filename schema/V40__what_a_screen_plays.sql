-- Issue 44: what a screen plays, defined once.
--
-- A screen plays an ad at an instant when the ad is assigned to it, switched on (`active`, and its
-- promotion, if it has one, switched on) and the instant lies in the ad's span: its own dates cut
-- to its promotion's window. These views resolve the rule's inputs; `routes::on_air::Run` reads
-- their three columns (`switched_on`, `runs_from`, `runs_until`) and says whether an instant is in
-- (`Run::plays_at`). Everything that asks reads them: an ad's `on_air` (and so the player, which
-- shows the screen's ads on air), a heartbeat's `current_ad_id`, a reported play, the simulated
-- fleet and its history. `runs_from` and `runs_until` are NULL when unbounded.

-- Per ad: whether it is switched on and the span it may play in.
CREATE VIEW ad_runs AS
SELECT a.id AS ad_id,
       a.company_id,
       a.duration_seconds,
       a.created_at,
       a.promotion_id,
       a.status = 'active' AS status_on,
       a.status = 'active' AND (a.promotion_id IS NULL OR coalesce(p.active, 0) = 1) AS switched_on,
       -- The later of the bounds that exist (NULL when neither does), then the earlier.
       max(coalesce(a.starts_at, p.starts_at), coalesce(p.starts_at, a.starts_at)) AS runs_from,
       min(coalesce(a.ends_at, p.ends_at), coalesce(p.ends_at, a.ends_at)) AS runs_until
FROM ads a LEFT JOIN promotions p ON p.id = a.promotion_id;

-- Per screen and ad it carries: the ad's run, and the instant it may first play there (the later
-- of the ad's creation and its assignment).
CREATE VIEW screen_ads AS
SELECT x.device_id,
       r.ad_id,
       r.company_id,
       r.duration_seconds,
       r.promotion_id,
       r.status_on,
       r.switched_on,
       r.runs_from,
       r.runs_until,
       x.assigned_at,
       max(r.created_at, x.assigned_at) AS playable_from
FROM ad_assignments x JOIN ad_runs r ON r.ad_id = x.ad_id;

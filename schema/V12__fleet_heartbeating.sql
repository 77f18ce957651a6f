-- Which simulated screens the fleet keeps heartbeating right now (steady and failing screens, a
-- flaky one while it is up). The offline check skips them while the fleet runs: their heartbeats
-- are refreshed at every step, so the timeline need not stop every few minutes to look at them.
ALTER TABLE device_simulations ADD COLUMN up INTEGER NOT NULL DEFAULT 0;
UPDATE device_simulations SET up = 1 WHERE profile IN ('steady', 'failing_playback', 'flaky');

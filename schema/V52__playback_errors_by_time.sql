-- A device's playback errors by time: every reader wants them newest first (diagnostics' recent
-- errors, the health page's last error of an offline screen) and the prune that keeps a device's
-- latest 100 skips those and deletes the rest. The index by (device_id, id) served none of them
-- in that order, so each sorted the device's errors: the fleet's prune after each simulated error
-- cost about 100k instructions. The new index serves all three, and the deletes of a device's
-- errors when it is deleted (its leading column).
DROP INDEX playback_errors_by_device;
CREATE INDEX playback_errors_by_device_time ON playback_errors(device_id, occurred_at, id);

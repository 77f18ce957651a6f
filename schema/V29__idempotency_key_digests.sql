-- Idempotency keys are stored as digests from now on (src/http/idempotency.rs `digest`): a key
-- a client sent is never kept as it was, since a client may send a secret as its key by mistake.
-- Records written before kept the raw key; they last 24 hours at most and are let go here.
DELETE FROM idempotency_keys;

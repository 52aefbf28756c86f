-- An API key row must have limits a request can be counted against: a plan of openapi.yaml's
-- x-rate-limit-plans, and for an enterprise key both of its own limits, above 0. A row without
-- them answered 500 on every request. SQLite cannot add a CHECK constraint to a table, so
-- triggers refuse such a row (RAISE ABORT: the statement fails with SQLITE_CONSTRAINT_TRIGGER).
-- (COALESCE: a comparison with NULL is neither true nor false, and a WHEN of NULL does not fire.)
-- A revoked row is exempt, so that the rows refused from now on can be kept, revoked.
-- A new plan in openapi.yaml needs a migration that recreates these triggers.

-- Such keys already stored never worked: they are revoked.
UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE revoked_at IS NULL
  AND NOT (plan IN ('free', 'pro', 'business')
    OR (plan = 'enterprise' AND COALESCE(per_minute, 0) > 0 AND COALESCE(per_day, 0) > 0));

CREATE TRIGGER api_keys_limits_insert BEFORE INSERT ON api_keys
WHEN NEW.revoked_at IS NULL
  AND NOT (NEW.plan IN ('free', 'pro', 'business')
    OR (NEW.plan = 'enterprise' AND COALESCE(NEW.per_minute, 0) > 0 AND COALESCE(NEW.per_day, 0) > 0))
BEGIN
  SELECT RAISE(ABORT, 'api_keys_limits: the plan must be free, pro, business or enterprise, and an enterprise key needs per_minute and per_day above 0');
END;

CREATE TRIGGER api_keys_limits_update BEFORE UPDATE OF plan, per_minute, per_day, revoked_at ON api_keys
WHEN NEW.revoked_at IS NULL
  AND NOT (NEW.plan IN ('free', 'pro', 'business')
    OR (NEW.plan = 'enterprise' AND COALESCE(NEW.per_minute, 0) > 0 AND COALESCE(NEW.per_day, 0) > 0))
BEGIN
  SELECT RAISE(ABORT, 'api_keys_limits: the plan must be free, pro, business or enterprise, and an enterprise key needs per_minute and per_day above 0');
END;

-- An API key row must have limits a request can be counted against: a plan of openapi.yaml's
-- x-rate-limit-plans, and for an enterprise key both of its own limits, above 0. A row without
-- them answered 500 on every request. (COALESCE: a comparison with NULL is neither true nor
-- false, and a CHECK passes on NULL.) A revoked row is exempt, so that the rows refused from now
-- on can be kept, revoked. A new plan in openapi.yaml needs a migration that replaces this check.

-- Such keys already stored never worked: they are revoked.
UPDATE api_keys SET revoked_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
WHERE revoked_at IS NULL
  AND NOT (plan IN ('free', 'pro', 'business')
    OR (plan = 'enterprise' AND COALESCE(per_minute, 0) > 0 AND COALESCE(per_day, 0) > 0));

ALTER TABLE api_keys ADD CONSTRAINT api_keys_limits CHECK (
  revoked_at IS NOT NULL
  OR plan IN ('free', 'pro', 'business')
  OR (plan = 'enterprise' AND COALESCE(per_minute, 0) > 0 AND COALESCE(per_day, 0) > 0)
);

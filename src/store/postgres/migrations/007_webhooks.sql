-- Never edit a migration that has shipped: add the next number.
-- Keys the service keeps for itself, the same for every instance: the cursor key signs the
-- cursors of paged lists (src/contract/paging.ts), so that each instance, after any restart,
-- accepts the cursors the service gave and refuses any other.
CREATE TABLE service_keys (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- Webhooks (openapi.yaml, webhooks and /webhooks): endpoints belong to the API key that made
-- them; an event is recorded with one delivery per endpoint subscribed when its change commits
-- (the transactional outbox), and each attempt of a delivery is logged.
CREATE TABLE webhook_endpoints (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  api_key_id TEXT COLLATE "C" NOT NULL REFERENCES api_keys(id),
  url TEXT NOT NULL,
  description TEXT,
  -- The event types it receives, separated by spaces.
  events TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  disabled_reason TEXT,
  -- whsec_… as it is, or encrypted (enc:v1:…) with WEBHOOK_ENCRYPTION_KEY.
  secret TEXT NOT NULL,
  previous_secret TEXT,
  -- Milliseconds since the epoch.
  previous_secret_expires_at BIGINT,
  failing_since BIGINT,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_by_key ON webhook_endpoints (api_key_id, id);

CREATE TABLE webhook_events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  -- The envelope {id, type, createdAt, data} as JSON text: the body of every attempt.
  payload TEXT NOT NULL
);

CREATE TABLE webhook_deliveries (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id BIGINT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
  endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL,
  -- Milliseconds since the epoch; NULL once the delivery is over.
  next_attempt_at BIGINT,
  -- The instance delivering it holds it until then (milliseconds since the epoch).
  lease_until BIGINT,
  leased_by TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  attempted_at TEXT NOT NULL,
  status_code INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  -- The first KiB of the receiver's answer.
  response_body TEXT,
  next_attempt_at TEXT
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);

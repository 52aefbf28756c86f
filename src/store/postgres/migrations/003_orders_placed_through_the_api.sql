-- Never edit a migration that has shipped: add the next number.
-- Orders are now placed through the API, so the database gives their ids, from a sequence that
-- never hands one out twice. Imports that bring their own ids move it past them (import.ts).
CREATE SEQUENCE orders_id_seq OWNED BY orders.id;
SELECT setval('orders_id_seq', COALESCE((SELECT MAX(id) FROM orders), 1), (SELECT MAX(id) FROM orders) IS NOT NULL);
ALTER TABLE orders ALTER COLUMN id SET DEFAULT nextval('orders_id_seq');
-- Pages of one pet's orders (listOrders with petId), in id order.
CREATE INDEX orders_by_pet ON orders (pet_id, id);

-- The answers given to requests with an Idempotency-Key (openapi.yaml, placeOrder), per API key.
-- Not cached by any instance, so without change triggers.
CREATE TABLE idempotency_keys (
  api_key_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  outcome TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (api_key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);

-- Every change a transaction announces is also kept in the transaction-local setting
-- petstore.changes (payloads separated by ';'): the service's own write transactions read it just
-- before they commit and bring this instance's caches up to date, since an instance ignores the
-- notifications of its own connections (changes.ts). The triggers stay the one source of what
-- changed, for every table they watch.
CREATE OR REPLACE FUNCTION petstore_notify(schema_name text, payload text) RETURNS void
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  BEGIN
    IF payload IS NULL OR payload = '' OR current_setting('petstore.announce', true) = 'off' THEN RETURN; END IF;
    IF octet_length(payload) > 7900 THEN
      payload := regexp_replace(payload, '(pet|order|key) [^ ]+', '\1 *', 'g');
    END IF;
    PERFORM set_config('petstore.changes',
      COALESCE(NULLIF(current_setting('petstore.changes', true), '') || ';', '') || payload, true);
    PERFORM pg_notify(petstore_channel(schema_name), payload);
  END
  $$;

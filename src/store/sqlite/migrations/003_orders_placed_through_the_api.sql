-- Never edit a migration that has shipped: add the next number.
-- Orders are now placed through the API, so the database gives their ids. AUTOINCREMENT never
-- hands out an id again, even after the highest order is cancelled: a URL of a cancelled order
-- can never name another one. SQLite cannot add it to a table, so the table is rebuilt.
CREATE TABLE orders_rebuilt (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pet_id INTEGER NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 1),
  ship_date TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
  complete INTEGER NOT NULL CHECK (complete IN (0, 1))
);
INSERT INTO orders_rebuilt (id, pet_id, quantity, ship_date, status, complete)
  SELECT id, pet_id, quantity, ship_date, status, complete FROM orders;
DROP TABLE orders;
ALTER TABLE orders_rebuilt RENAME TO orders;
CREATE INDEX orders_open_by_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
-- Pages of one pet's orders (listOrders with petId), in id order.
CREATE INDEX orders_by_pet ON orders (pet_id, id);
-- The change log triggers of migration 002, which went with the old table.
CREATE TRIGGER orders_insert_logged AFTER INSERT ON orders
BEGIN
  INSERT INTO list_changes (pet_id, order_id) VALUES (NEW.pet_id, NEW.id);
END;
CREATE TRIGGER orders_update_logged AFTER UPDATE ON orders
BEGIN
  INSERT INTO list_changes (pet_id, order_id) VALUES (NEW.pet_id, NEW.id);
  INSERT INTO list_changes (pet_id, order_id) SELECT OLD.pet_id, OLD.id WHERE OLD.pet_id IS NOT NEW.pet_id OR OLD.id IS NOT NEW.id;
END;
CREATE TRIGGER orders_delete_logged AFTER DELETE ON orders
BEGIN
  INSERT INTO list_changes (pet_id, order_id) VALUES (OLD.pet_id, OLD.id);
END;

-- The answers given to requests with an Idempotency-Key (openapi.yaml, placeOrder), per API key.
-- Not cached by any process, so not logged in list_changes.
CREATE TABLE idempotency_keys (
  api_key_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  outcome TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (api_key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);

-- Never edit a migration that has shipped: add the next number.
-- Every change to an inventory entry or an order, by any connection (this server, another
-- instance, the CLI, plain SQL), appends a row here in the same transaction. A server keeps its
-- lists in memory and, when the database has changed, re-reads only the entries logged after the
-- last row it applied. Servers delete the oldest rows as they write (keeping the newest).
CREATE TABLE list_changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  -- An inventory entry whose quantity or status may have changed (NULL: none).
  pet_id INTEGER,
  -- An order that was added, changed or removed (NULL: none).
  order_id INTEGER
);
CREATE TRIGGER inventory_insert_logged AFTER INSERT ON inventory
BEGIN
  INSERT INTO list_changes (pet_id) VALUES (NEW.pet_id);
END;
CREATE TRIGGER inventory_update_logged AFTER UPDATE ON inventory
BEGIN
  INSERT INTO list_changes (pet_id) VALUES (NEW.pet_id);
  INSERT INTO list_changes (pet_id) SELECT OLD.pet_id WHERE OLD.pet_id IS NOT NEW.pet_id;
END;
CREATE TRIGGER inventory_delete_logged AFTER DELETE ON inventory
BEGIN
  INSERT INTO list_changes (pet_id) VALUES (OLD.pet_id);
END;
-- An order's pet changes status when the order's quantity, status or pet changes.
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

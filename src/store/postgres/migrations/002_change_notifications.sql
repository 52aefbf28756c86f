-- Every committed write to a table the instances cache is announced on one channel per schema,
-- with what it changed, whoever wrote it (an instance, the keys CLI, psql): see changes.ts.
-- The payload is "TAG IDS[ TAG IDS]": TAG is pet (inventory, pets and the status orders derive),
-- order or key; IDS are the changed ids (key hashes for keys), comma separated, or * for "any".
-- Triggers are per statement, so a bulk import sends one notification per table, not per row.
-- Every function keeps the search_path it was created under: a trigger runs under the writer's,
-- which need not name this schema (psql writing schema.table).

-- The channel of a schema: a name of at most 63 bytes, the longest PostgreSQL keeps.
CREATE FUNCTION petstore_channel(schema_name text) RETURNS text
  LANGUAGE sql IMMUTABLE SET search_path FROM CURRENT AS $$
    SELECT CASE WHEN octet_length(schema_name) <= 54 THEN 'petstore ' || schema_name
      ELSE 'petstore ' || md5(schema_name) END
  $$;

-- Sends the notification; a payload past PostgreSQL's 8000-byte limit becomes "everything of
-- these tags changed" (each instance then reloads those caches).
--
-- A transaction that notifies holds a database-wide lock from just before its commit until after
-- it, so notifying writes commit one at a time, each waiting for the previous one's WAL flush. On
-- the request path (PATCH) the service therefore sets petstore.announce to 'off' for the writing
-- transaction and announces the write itself right after its commit, in a transaction of its
-- own that writes nothing (sent together with the write: one round trip). Every other writer
-- (imports, the keys CLI, psql) is announced here, atomically with its commit.
CREATE FUNCTION petstore_notify(schema_name text, payload text) RETURNS void
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  BEGIN
    IF payload IS NULL OR payload = '' OR current_setting('petstore.announce', true) = 'off' THEN RETURN; END IF;
    IF octet_length(payload) > 7900 THEN
      payload := regexp_replace(payload, '(pet|order|key) [^ ]+', '\1 *', 'g');
    END IF;
    PERFORM pg_notify(petstore_channel(schema_name), payload);
  END
  $$;

-- Transition tables: new_rows for INSERT and UPDATE, old_rows for UPDATE and DELETE (a trigger
-- may only reference the ones its event has, hence one trigger per event).
CREATE FUNCTION petstore_inventory_changed() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE ids text;
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN ids := '*';
    ELSIF TG_OP = 'INSERT' THEN SELECT string_agg(DISTINCT pet_id::text, ',') INTO ids FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN SELECT string_agg(DISTINCT pet_id::text, ',') INTO ids FROM old_rows;
    ELSE SELECT string_agg(DISTINCT id::text, ',') INTO ids
      FROM (SELECT pet_id FROM new_rows UNION ALL SELECT pet_id FROM old_rows) AS changed(id);
    END IF;
    PERFORM petstore_notify(TG_TABLE_SCHEMA, 'pet ' || ids);
    RETURN NULL;
  END
  $$;

CREATE FUNCTION petstore_pets_changed() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE ids text;
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN ids := '*';
    ELSIF TG_OP = 'INSERT' THEN SELECT string_agg(DISTINCT id::text, ',') INTO ids FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN SELECT string_agg(DISTINCT id::text, ',') INTO ids FROM old_rows;
    ELSE SELECT string_agg(DISTINCT id::text, ',') INTO ids
      FROM (SELECT id FROM new_rows UNION ALL SELECT id FROM old_rows) AS changed(id);
    END IF;
    PERFORM petstore_notify(TG_TABLE_SCHEMA, 'pet ' || ids);
    RETURN NULL;
  END
  $$;

-- An order changes the order list and the status of its pet (of both pets, when it moves).
CREATE FUNCTION petstore_orders_changed() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE order_ids text; pet_ids text;
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN order_ids := '*'; pet_ids := '*';
    ELSIF TG_OP = 'INSERT' THEN
      SELECT string_agg(DISTINCT id::text, ','), string_agg(DISTINCT pet_id::text, ',') INTO order_ids, pet_ids FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
      SELECT string_agg(DISTINCT id::text, ','), string_agg(DISTINCT pet_id::text, ',') INTO order_ids, pet_ids FROM old_rows;
    ELSE
      SELECT string_agg(DISTINCT id::text, ','), string_agg(DISTINCT pet_id::text, ',') INTO order_ids, pet_ids
        FROM (SELECT id, pet_id FROM new_rows UNION ALL SELECT id, pet_id FROM old_rows) AS changed;
    END IF;
    PERFORM petstore_notify(TG_TABLE_SCHEMA, 'order ' || order_ids || ' pet ' || pet_ids);
    RETURN NULL;
  END
  $$;

CREATE FUNCTION petstore_api_keys_changed() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE hashes text;
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN hashes := '*';
    ELSIF TG_OP = 'INSERT' THEN SELECT string_agg(DISTINCT key_hash, ',') INTO hashes FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN SELECT string_agg(DISTINCT key_hash, ',') INTO hashes FROM old_rows;
    ELSE SELECT string_agg(DISTINCT h, ',') INTO hashes
      FROM (SELECT key_hash FROM new_rows UNION ALL SELECT key_hash FROM old_rows) AS changed(h);
    END IF;
    PERFORM petstore_notify(TG_TABLE_SCHEMA, 'key ' || hashes);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER inventory_inserted AFTER INSERT ON inventory REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_inventory_changed();
CREATE TRIGGER inventory_updated AFTER UPDATE ON inventory REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_inventory_changed();
CREATE TRIGGER inventory_deleted AFTER DELETE ON inventory REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_inventory_changed();
CREATE TRIGGER inventory_truncated AFTER TRUNCATE ON inventory
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_inventory_changed();

CREATE TRIGGER pets_inserted AFTER INSERT ON pets REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_pets_changed();
CREATE TRIGGER pets_updated AFTER UPDATE ON pets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_pets_changed();
CREATE TRIGGER pets_deleted AFTER DELETE ON pets REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_pets_changed();
CREATE TRIGGER pets_truncated AFTER TRUNCATE ON pets
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_pets_changed();

CREATE TRIGGER orders_inserted AFTER INSERT ON orders REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_orders_changed();
CREATE TRIGGER orders_updated AFTER UPDATE ON orders REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_orders_changed();
CREATE TRIGGER orders_deleted AFTER DELETE ON orders REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_orders_changed();
CREATE TRIGGER orders_truncated AFTER TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_orders_changed();

CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_api_keys_changed();
CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_api_keys_changed();
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_api_keys_changed();
CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION petstore_api_keys_changed();

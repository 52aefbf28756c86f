-- Never edit a migration that has shipped: add the next number.
-- One template for every change trigger (migration 002 wrote one function per table):
-- petstore_changed() announces, per statement, the keys each of its (TAG, COLUMN) argument pairs
-- names in the changed rows; petstore_watch(table, TAG, COLUMN, …) gives a table its four
-- triggers. A table whose changes the instances must hear of (what they cache, or what changes an
-- inventory entry's status) is watched in its own migration with one line:
--   SELECT petstore_watch('holds', 'pet', 'pet_id');
-- The payload is the one of migration 002 ("TAG IDS[ TAG IDS]"), read by changes.ts.
CREATE FUNCTION petstore_changed() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE
    payload text := '';
    ids text;
    source text;
  BEGIN
    FOR i IN 0 .. TG_NARGS / 2 - 1 LOOP
      IF TG_OP = 'TRUNCATE' THEN ids := '*';
      ELSE
        source := CASE TG_OP
          WHEN 'INSERT' THEN 'SELECT %1$I FROM new_rows'
          WHEN 'DELETE' THEN 'SELECT %1$I FROM old_rows'
          ELSE 'SELECT %1$I FROM new_rows UNION ALL SELECT %1$I FROM old_rows' END;
        EXECUTE format('SELECT string_agg(DISTINCT k::text, '','') FROM (' || source || ') AS changed(k)', TG_ARGV[2 * i + 1]) INTO ids;
      END IF;
      IF ids IS NOT NULL THEN
        payload := payload || CASE WHEN payload = '' THEN '' ELSE ' ' END || TG_ARGV[2 * i] || ' ' || ids;
      END IF;
    END LOOP;
    PERFORM petstore_notify(TG_TABLE_SCHEMA, payload);
    RETURN NULL;
  END
  $$;

CREATE FUNCTION petstore_watch(watched regclass, VARIADIC tags_and_columns text[]) RETURNS void
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
  DECLARE
    name text := (SELECT relname FROM pg_class WHERE oid = watched);
    args text := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(tags_and_columns) AS a);
  BEGIN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION petstore_changed(%s)', name || '_inserted', watched, args);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION petstore_changed(%s)', name || '_updated', watched, args);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION petstore_changed(%s)', name || '_deleted', watched, args);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION petstore_changed(%s)', name || '_truncated', watched, args);
  END
  $$;

-- The tables of migration 002, now from the template: same payloads as before.
DROP TRIGGER inventory_inserted ON inventory;
DROP TRIGGER inventory_updated ON inventory;
DROP TRIGGER inventory_deleted ON inventory;
DROP TRIGGER inventory_truncated ON inventory;
DROP TRIGGER pets_inserted ON pets;
DROP TRIGGER pets_updated ON pets;
DROP TRIGGER pets_deleted ON pets;
DROP TRIGGER pets_truncated ON pets;
DROP TRIGGER orders_inserted ON orders;
DROP TRIGGER orders_updated ON orders;
DROP TRIGGER orders_deleted ON orders;
DROP TRIGGER orders_truncated ON orders;
DROP TRIGGER api_keys_inserted ON api_keys;
DROP TRIGGER api_keys_updated ON api_keys;
DROP TRIGGER api_keys_deleted ON api_keys;
DROP TRIGGER api_keys_truncated ON api_keys;
DROP FUNCTION petstore_inventory_changed();
DROP FUNCTION petstore_pets_changed();
DROP FUNCTION petstore_orders_changed();
DROP FUNCTION petstore_api_keys_changed();

SELECT petstore_watch('inventory', 'pet', 'pet_id');
SELECT petstore_watch('pets', 'pet', 'id');
-- An order changes the order and the status of its pet (of both pets, when it moves).
SELECT petstore_watch('orders', 'order', 'id', 'pet', 'pet_id');
SELECT petstore_watch('api_keys', 'key', 'key_hash');

import { inventorySelectList, postgresInventoryJson } from '../inventory-fields.js'
import { statusExpression } from '../sql.js'

/** Every inventory entry (or those of `where`) as a row of InventoryItem's fields, named `f`. */
const inventoryRows = (where = '') => `(SELECT ${inventorySelectList('i')} FROM inventory i ${where}) AS f`

/** A JSON value of SQL as compact JSON text (to_json writes numbers as digits and escapes strings). */
const json = (expression: string) => `to_json(${expression})::text`

/**
 * The batched PATCH; `wait` is what FOR UPDATE does with a row another transaction holds. A row
 * per written entry, and with `json` NULL a row per entry that was skipped (SKIP LOCKED); none
 * for a pet without an entry. `target` is the pet each row answers for.
 *
 * In the same statement (the PATCH's own transaction: the outbox), each entry whose quantity or
 * status changed gets its inventory.updated event when an endpoint wants it: subscribed and
 * enabled, of an active key holding the scope $3 (a LIKE pattern; NULL: record none). The event's
 * body is the same JSON text, byte for byte, that recordEvent (src/repositories/webhooks.ts) writes
 * on SQLite; its id is evt_ and 16 random bytes (gen_random_uuid, PostgreSQL 13 and later); $4 is
 * when its delivery is due, $5 when it happened.
 */
const updateInventory = (wait: 'SKIP LOCKED' | '') => `WITH quiet AS MATERIALIZED (SELECT set_config('petstore.announce', 'off', true)),
    changes AS MATERIALIZED (SELECT * FROM unnest($1::bigint[], $2::integer[]) AS c(pet_id, quantity)),
    locked AS MATERIALIZED (SELECT i.pet_id, i.quantity AS before_quantity, ${statusExpression('i.pet_id', 'i.quantity')} AS before_status
      FROM inventory i, quiet
      WHERE i.pet_id IN (SELECT pet_id FROM changes) ORDER BY i.pet_id FOR UPDATE OF i ${wait}),
    f AS (UPDATE inventory i SET quantity = c.quantity FROM changes c, locked l
      WHERE i.pet_id = c.pet_id AND l.pet_id = c.pet_id RETURNING ${inventorySelectList('i')}),
    subscribers AS MATERIALIZED (SELECT e.id FROM webhook_endpoints e JOIN api_keys k ON k.id = e.api_key_id
      WHERE e.enabled AND k.revoked_at IS NULL AND ' ' || e.events || ' ' LIKE '% inventory.updated %'
        AND ' ' || k.scopes || ' ' LIKE $3::text),
    recorded AS (INSERT INTO webhook_events (event_id, type, created_at, payload)
      SELECT x.event_id, 'inventory.updated', $5::text,
        '{"id":' || ${json('x.event_id')} || ',"type":"inventory.updated","createdAt":' || ${json('$5::text')}
          || ',"data":{"petId":' || ${json('f."petId"')} || ',"quantity":' || ${json('f.quantity')} || ',"status":' || ${json('f.status')}
          || ',"previous":{"quantity":' || ${json('l.before_quantity')} || ',"status":' || ${json('l.before_status')} || '}}}'
      FROM f JOIN locked l ON l.pet_id = f."petId"
        CROSS JOIN LATERAL (SELECT 'evt_' || rtrim(translate(encode(uuid_send(gen_random_uuid()), 'base64'), '+/', '-_'), '=') AS event_id) x
      WHERE EXISTS (SELECT 1 FROM subscribers) AND (f.quantity <> l.before_quantity OR f.status <> l.before_status)
      RETURNING id),
    deliveries AS (INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
      SELECT recorded.id, subscribers.id, 'pending', 0, $4::bigint FROM recorded CROSS JOIN subscribers)
  SELECT c.pet_id AS target, f.*, ${postgresInventoryJson('f')} AS json
    FROM changes c LEFT JOIN f ON f."petId" = c.pet_id
    WHERE f."petId" IS NOT NULL OR EXISTS (SELECT 1 FROM inventory i WHERE i.pet_id = c.pet_id)`

/** The statements of the request path, prepared once per connection under their names here. */
export const sql = {
  // The list as one JSON text built by the server, the same bytes as JSON.stringify of
  // listInventory and as SQLite's json_group_array: for reads while nothing is cached.
  listInventoryJson: `SELECT COALESCE('[' || string_agg(${postgresInventoryJson('f')}, ',' ORDER BY f."petId") || ']', '[]') AS json
    FROM ${inventoryRows()}`,
  // Every entry's JSON text, for the cached list: "petId json" lines in one text value, which
  // costs far less to receive than a row per entry (neither part holds a space or a line break).
  inventoryEntries: `SELECT COALESCE(string_agg(f."petId" || ' ' || ${postgresInventoryJson('f')}, E'\\n' ORDER BY f."petId"), '') AS lines
    FROM ${inventoryRows()}`,
  inventoryEntriesOf: `SELECT f."petId" AS "petId", ${postgresInventoryJson('f')} AS json
    FROM ${inventoryRows('WHERE i.pet_id = ANY($1::bigint[])')}`,
  // The PATCHes of one event-loop turn (InventoryWrites), one per pet, in one statement: each
  // status is computed from the quantity this very statement wrote, and comes with the entry's
  // JSON text for the cached list. A row another transaction holds is skipped, not waited for
  // (SKIP LOCKED): its PATCH is sent again alone (updateInventoryOne), so one busy row never
  // holds up, or times out, the others. Skipping also means the batch never waits while holding
  // rows, so two batches (two instances) cannot deadlock. The triggers stay quiet for it
  // (petstore.announce is 'off' until its transaction ends): the writer sends `announce` right
  // behind it (see migration 002 for why).
  updateInventory: updateInventory('SKIP LOCKED'),
  // One PATCH, which waits for its row (within statement_timeout).
  updateInventoryOne: updateInventory(''),
  announce: 'SELECT petstore_notify(current_schema(), $1)'
} as const

export type StatementName = keyof typeof sql

/** The bulk statements of an import: one statement per table, the rows passed as arrays. */
export const importSql = {
  upsertPets: `INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[])
    ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
      category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`,
  ensureInventory: `INSERT INTO inventory (pet_id, quantity) SELECT unnest($1::bigint[]), 0
    ON CONFLICT (pet_id) DO NOTHING`,
  upsertInventory: `INSERT INTO inventory (pet_id, quantity) SELECT * FROM unnest($1::bigint[], $2::integer[])
    ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity`,
  upsertOrders: `INSERT INTO orders (id, pet_id, quantity, ship_date, status, complete)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::boolean[])
    ON CONFLICT (id) DO UPDATE SET pet_id = excluded.pet_id, quantity = excluded.quantity,
      ship_date = excluded.ship_date, status = excluded.status, complete = excluded.complete`,
  advanceOrderIds: `SELECT setval(pg_get_serial_sequence('orders', 'id'),
    GREATEST((SELECT COALESCE(MAX(id), 0) FROM orders), nextval(pg_get_serial_sequence('orders', 'id'))))`
} as const

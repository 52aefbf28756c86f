-- Never edit a migration that has shipped: add the next number.
CREATE TABLE pets (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  category_id INTEGER,
  category_name TEXT,
  photo_urls TEXT NOT NULL DEFAULT '[]',
  tags TEXT
);
CREATE TABLE inventory (
  pet_id INTEGER PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 0 AND quantity <= 2147483647)
);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  pet_id INTEGER NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 1),
  ship_date TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
  complete INTEGER NOT NULL CHECK (complete IN (0, 1))
);
CREATE INDEX orders_open_by_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  per_minute INTEGER,
  per_day INTEGER,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);

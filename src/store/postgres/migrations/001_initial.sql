-- Never edit a migration that has shipped: add the next number.
-- Text columns keep exactly what was written (JSON as text, timestamps as ISO strings), as on
-- SQLite; COLLATE "C" makes ordering by them independent of the server's locale.
CREATE TABLE pets (
  id BIGINT PRIMARY KEY,
  name TEXT NOT NULL,
  category_id BIGINT,
  category_name TEXT,
  photo_urls TEXT NOT NULL DEFAULT '[]',
  tags TEXT
);
CREATE TABLE inventory (
  pet_id BIGINT PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 0)
);
CREATE TABLE orders (
  id BIGINT PRIMARY KEY,
  pet_id BIGINT NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  quantity INTEGER NOT NULL CHECK (quantity >= 1),
  ship_date TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
  complete BOOLEAN NOT NULL
);
CREATE INDEX orders_open_by_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
CREATE TABLE api_keys (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  per_minute INTEGER,
  per_day INTEGER,
  created_at TEXT COLLATE "C" NOT NULL,
  revoked_at TEXT
);

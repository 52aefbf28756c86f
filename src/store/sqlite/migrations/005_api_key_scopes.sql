-- Never edit a migration that has shipped: add the next number.
-- The scopes an API key holds (openapi.yaml, bearerAuth's x-scopes), separated by spaces. Keys
-- issued before scopes existed hold every scope, as a key made without --scopes does.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'inventory:read inventory:write orders:read orders:write webhooks';

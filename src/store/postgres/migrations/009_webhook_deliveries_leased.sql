-- Never edit a migration that has shipped: add the next number.
-- The deliveries under way (leased): a claim counts an endpoint's, per endpoint, at every claim;
-- settling clears the lease, so this index holds only the few attempts being made
-- (src/repositories/webhook-deliveries.ts).
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_until) WHERE lease_until IS NOT NULL;

-- Never edit a migration that has shipped: add the next number.
-- The pending deliveries of one endpoint in the order they are due: a claim takes a few of each
-- endpoint's at a time, and counts what each endpoint already has under way, so that one slow
-- receiver never holds every delivery slot (src/repositories/webhook-deliveries.ts).
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';

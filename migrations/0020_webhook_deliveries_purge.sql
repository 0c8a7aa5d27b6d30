-- Delivery records are removed 30 days after their last change by the hourly cron (purgeDeliveries,
-- src/webhooks/store.ts); they had been kept for good. The index keeps that DELETE from reading the table.
CREATE INDEX webhook_deliveries_updated ON webhook_deliveries (updated_at);

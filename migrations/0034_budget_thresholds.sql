-- Soft thresholds on a budget (docs/operations/budgets.md): fractions of its limit that each send a signed
-- event once per window to alert_url, signed with alert_secret (HMAC needs it in clear, as a hook's secret).
ALTER TABLE budgets ADD COLUMN thresholds TEXT NOT NULL DEFAULT '[]';
ALTER TABLE budgets ADD COLUMN alert_url TEXT;
ALTER TABLE budgets ADD COLUMN alert_secret TEXT;

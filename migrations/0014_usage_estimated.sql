-- Every provider call is billed, cut streams included (issue 25, finding 13); where the provider
-- reported no usage the tokens are estimated, and this counts how many of a row's requests were.
ALTER TABLE usage ADD COLUMN estimated_requests INTEGER NOT NULL DEFAULT 0;

-- A fact's stored token estimate is now its line in the one message its scope and kind load as
-- (src/memory/facts.ts: the quoted text and its newline; the group's header is charged once, at
-- load). Rows written before were estimated as a message of their own: 4 tokens of framing plus
-- ceil((len("[kind scope] ") + len(quoted text)) / 4). Taking off the framing and the whole tokens
-- of the header, floor(len("[kind scope]") / 4), never gives less than the new estimate and at most
-- one token more (the header's remainder shared a token with the text), so budgets stay bounds.
UPDATE facts SET tokens = MAX(1, tokens - 4 - (length(kind) + length(scope) + 3) / 4);
-- No trigger follows a tokens-only update: the per-scope sums are recounted.
UPDATE fact_scope_stats SET tokens = COALESCE((SELECT SUM(f.tokens) FROM facts f WHERE f.tenant_id = fact_scope_stats.tenant_id AND f.scope = fact_scope_stats.scope), 0);

-- Who wrote a fact: a fact an admin or the operator wrote in the system or organization scope loads as a rule,
-- `[{kind} {scope}] {text}`, as the source document has it; what a member, a webhook or a model (memory tools,
-- MCP, extraction) wrote loads as stored data, never as the operator's prompt (src/memory/facts.ts). Facts
-- written before this migration are 'unknown' and load as data: an admin remembers a rule again to make it one.
ALTER TABLE facts ADD COLUMN written_by TEXT NOT NULL DEFAULT 'unknown';

-- Turns of non-session scopes had no writer: every run read an always-empty table.
-- Session turns live in the thread Durable Object; other scopes hold facts only.
DROP INDEX IF EXISTS scope_turns_by_scope;
DROP TABLE IF EXISTS scope_turns;

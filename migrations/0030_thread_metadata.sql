-- LangGraph's thread API (src/agent-protocol/): a thread's metadata (JSON object; NULL when none), set by
-- POST/PATCH /threads and stamped with graph_id / assistant_id by runs, searched by POST /threads/search.
ALTER TABLE threads ADD COLUMN metadata TEXT;

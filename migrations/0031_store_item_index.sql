-- The LangGraph store's search by `query` (docs/guides/langgraph.md, docs/recall.md): each item's indexed texts
-- (a JSON array, the fields its `index` names, LangGraph's ["$"] by default; NULL when `index: false`), read by
-- full-text ranking, and their vectors (int8, one per text, concatenated) by the embedder named in vec_by (NULL
-- while it was not ready: a search embeds the texts when it reads them). They are the item's own columns: an
-- item deleted or expired takes them with it, and every read of them is bound to the tenant like the row.
ALTER TABLE store_items ADD COLUMN index_text TEXT;
ALTER TABLE store_items ADD COLUMN vec BLOB;
ALTER TABLE store_items ADD COLUMN vec_by TEXT;

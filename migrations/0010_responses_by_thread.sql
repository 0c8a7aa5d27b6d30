-- Deleting a thread deletes its stored responses: found by thread, not by scanning the tenant's.
CREATE INDEX responses_by_thread ON responses (tenant_id, thread_id);

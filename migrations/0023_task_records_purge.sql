-- Task records (tasks_done, dead_letters) are removed 30 days after they were written by the hourly cron
-- (purgeTaskRecords, src/tasks/store.ts); they had been kept for good. The indexes keep those DELETEs from reading the tables.
CREATE INDEX tasks_done_created ON tasks_done (created_at);
CREATE INDEX dead_letters_created ON dead_letters (created_at);

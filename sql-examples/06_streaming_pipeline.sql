-- One table, two faces: a changelog you stream from. A continuous INSERT ... SELECT reads the
-- source's changes (inserts, updates, deletes) and keeps a downstream table in sync.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS stream_demo CASCADE;
CREATE DATABASE stream_demo;
USE stream_demo;

CREATE TABLE accounts (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('changelog-producer' = 'lookup');
CREATE TABLE rich_accounts (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED);

INSERT INTO accounts VALUES (1, 'ada', 500), (2, 'alan', 50), (3, 'grace', 900);

-- In streaming mode INSERT INTO ... SELECT ... FROM <managed table> is a continuous job.
-- 'available-now' makes the job process every change committed so far and then finish, so this
-- script is deterministic; the default trigger ('processing-time') keeps it running
-- (see SHOW JOBS / STOP JOB).
SET 'execution.runtime-mode' = 'streaming';
SET 'execution.streaming.trigger' = 'available-now';
INSERT INTO rich_accounts SELECT * FROM accounts WHERE balance >= 100;

-- More changes upstream: an update and a delete flow through as -U/+U and -D.
SET 'execution.runtime-mode' = 'batch';
INSERT INTO accounts VALUES (2, 'alan', 250);
DELETE FROM accounts WHERE id = 3;

SET 'execution.runtime-mode' = 'streaming';
INSERT INTO rich_accounts SELECT * FROM accounts WHERE balance >= 100;
SET 'execution.runtime-mode' = 'batch';

SHOW JOBS;
SELECT id, owner, balance FROM rich_accounts ORDER BY id;

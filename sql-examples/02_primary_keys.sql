-- Primary-key tables: upserts and deletes on an LSM tree, with each merge engine.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS pk_demo CASCADE;
CREATE DATABASE pk_demo;
USE pk_demo;

-- deduplicate (the default): the latest write of a key wins; DELETE removes keys.
CREATE TABLE users (id BIGINT, name STRING, city STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2');
INSERT INTO users VALUES (1, 'ada', 'London'), (2, 'linus', 'Helsinki'), (3, 'grace', 'Arlington');
INSERT INTO users VALUES (2, 'linus', 'Portland');
DELETE FROM users WHERE id = 3;
UPDATE users SET city = 'Cambridge' WHERE id = 1;

-- partial-update: each write fills in the columns it has; NULLs keep the previous value.
CREATE TABLE profile (id BIGINT, email STRING, phone STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('merge-engine' = 'partial-update');
INSERT INTO profile VALUES (1, 'ada@example.com', CAST(NULL AS STRING));
INSERT INTO profile VALUES (1, CAST(NULL AS STRING), '+44 20 0000');

-- aggregation: per-column functions applied at merge time.
CREATE TABLE sales (product STRING, qty BIGINT, max_price DOUBLE, PRIMARY KEY (product) NOT ENFORCED)
  WITH ('merge-engine' = 'aggregation',
        'fields.qty.aggregate-function' = 'sum',
        'fields.max_price.aggregate-function' = 'max');
INSERT INTO sales VALUES ('apple', 3, 1.5), ('pear', 1, 2.0);
INSERT INTO sales VALUES ('apple', 4, 1.25), ('pear', 2, 2.5);

-- first-row: the first write of a key is kept, later ones are ignored.
CREATE TABLE first_seen (id BIGINT, seen_at STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('merge-engine' = 'first-row');
INSERT INTO first_seen VALUES (1, 'monday');
INSERT INTO first_seen VALUES (1, 'tuesday'), (2, 'tuesday');

-- Compaction merges the sorted runs (also happens automatically after writes).
ALTER TABLE sales COMPACT;

SELECT 'users' AS t, CAST(id AS STRING) AS k, concat_ws(',', name, city) AS v FROM users
UNION ALL SELECT 'profile', CAST(id AS STRING), concat_ws(',', email, phone) FROM profile
UNION ALL SELECT 'sales', product, concat_ws(',', CAST(qty AS STRING), CAST(max_price AS STRING)) FROM sales
UNION ALL SELECT 'first_seen', CAST(id AS STRING), seen_at FROM first_seen
ORDER BY t, k;

-- Every commit is a snapshot; read any of them again.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS tt_demo CASCADE;
CREATE DATABASE tt_demo;
USE tt_demo;

CREATE TABLE prices (item STRING, price DOUBLE, PRIMARY KEY (item) NOT ENFORCED);
INSERT INTO prices VALUES ('tea', 3.0), ('coffee', 4.0);      -- snapshot 1
INSERT INTO prices VALUES ('tea', 3.5);                        -- snapshot 2
DELETE FROM prices WHERE item = 'coffee';                      -- snapshot 3

SELECT snapshot_id, commit_kind, total_record_count FROM `prices$snapshots` ORDER BY snapshot_id;

SELECT 'v1' AS version, item, price FROM prices VERSION AS OF 1
UNION ALL
SELECT 'v2', item, price FROM prices /*+ OPTIONS('scan.snapshot-id' = '2') */
UNION ALL
SELECT 'latest', item, price FROM prices
ORDER BY version, item;

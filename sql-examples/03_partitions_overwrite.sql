-- Partitions, INSERT OVERWRITE (static and dynamic) and DROP PARTITION.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS part_demo CASCADE;
CREATE DATABASE part_demo;
USE part_demo;

CREATE TABLE events (id BIGINT, kind STRING, dt STRING) PARTITIONED BY (dt);
INSERT INTO events VALUES (1, 'click', '2024-01-01'), (2, 'view', '2024-01-01'), (3, 'click', '2024-01-02');

-- Static partition overwrite: replaces only dt = '2024-01-01'.
INSERT OVERWRITE events PARTITION (dt = '2024-01-01') SELECT 10, 'purchase';

-- Dynamic partition overwrite: replaces the partitions the query writes to. Spark's (and Paimon's)
-- default mode is static, which would replace the whole table; ask for dynamic mode.
SET spark.sql.sources.partitionOverwriteMode = dynamic;
INSERT OVERWRITE events PARTITION (dt) SELECT 20, 'view', '2024-01-03';
RESET spark.sql.sources.partitionOverwriteMode;

-- Drop a partition (a metadata-only delete; files are reclaimed by snapshot expiration).
INSERT INTO events VALUES (30, 'click', '2024-01-04');
ALTER TABLE events DROP PARTITION (dt = '2024-01-04');

SHOW PARTITIONS events;

SELECT dt, id, kind FROM events ORDER BY dt, id;

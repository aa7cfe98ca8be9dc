-- System tables expose a table's metadata: snapshots, schemas, options, files, partitions, ...

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS sys_demo CASCADE;
CREATE DATABASE sys_demo;
USE sys_demo;

CREATE TABLE metrics (host STRING, ts BIGINT, value DOUBLE, dt STRING, PRIMARY KEY (dt, host, ts) NOT ENFORCED)
  PARTITIONED BY (dt) WITH ('bucket' = '2');
INSERT INTO metrics VALUES ('a', 1, 0.5, '2024-01-01'), ('b', 1, 0.7, '2024-01-01'), ('a', 2, 0.9, '2024-01-02');
ALTER TABLE metrics SET ('snapshot.num-retained.min' = '5');

SELECT snapshot_id, commit_kind, delta_record_count FROM `metrics$snapshots`;
SELECT schema_id, primary_keys, partition_keys FROM `metrics$schemas`;
SELECT key, value FROM `metrics$options` WHERE key IN ('bucket', 'snapshot.num-retained.min') ORDER BY key;
SELECT partition, bucket, level, record_count FROM `metrics$files` ORDER BY partition, bucket;
SELECT partition, record_count, file_count FROM `metrics$partitions` ORDER BY partition;

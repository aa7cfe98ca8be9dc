-- Cleanup that cannot lose data: partitions expire by their date, orphan files of failed jobs go,
-- and every run is written to the table's maintenance log.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS cleanup_demo CASCADE;
CREATE DATABASE cleanup_demo;
USE cleanup_demo;

-- Partitions older than 30 days expire; the check runs after commits, at most once an hour.
CREATE TABLE clicks (user_id INT, page STRING, dt STRING) PARTITIONED BY (dt) WITH (
  'partition.expiration-time' = '30 d',
  'partition.expiration-check-interval' = '1 h',
  'partition.timestamp-formatter' = 'yyyyMMdd'
);
INSERT INTO clicks VALUES (1, 'home', '29990101'), (2, 'cart', '29990101'), (3, 'home', '29990102');
CALL sys.create_tag(`table` => 'cleanup_demo.clicks', tag => 'before_backfill');

-- A backfill of long-gone days. The first INSERT already ran the automatic check, so the next
-- one waits for the check interval; expire on demand instead (dry_run first shows what would go).
INSERT INTO clicks VALUES (4, 'home', '20200101'), (5, 'faq', '20200102');
CALL sys.expire_partitions(`table` => 'cleanup_demo.clicks', dry_run => true);
-- A mark-delete: one new snapshot; the files stay until the snapshots and tags using them expire.
CALL sys.expire_partitions(`table` => 'cleanup_demo.clicks', max_expires => 10);

-- Orphan files: what no snapshot, tag, branch or changelog references. Only files older than
-- older_than (default one day ago) are considered; a fresh table has none.
CALL sys.remove_orphan_files(`table` => 'cleanup_demo.clicks', dry_run => true);
CALL sys.remove_orphan_files(`table` => 'cleanup_demo.*');

-- Every run, automatic or called, is in the maintenance log.
SELECT procedure, `trigger`, dry_run, deleted_files, error FROM clicks$maintenance_log ORDER BY started_at;

SELECT dt, count(*) AS clicks FROM clicks GROUP BY dt ORDER BY dt;

-- Snapshot expiration, the retention mark, and the table that explains what is kept.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS retention_demo CASCADE;
CREATE DATABASE retention_demo;
USE retention_demo;

-- retention.time: how much history time travel must keep showing (here none beyond the latest).
CREATE TABLE readings (sensor STRING, reading DOUBLE) TBLPROPERTIES ('retention.time' = '0 s');
INSERT INTO readings VALUES ('s1', 1.0);
INSERT INTO readings VALUES ('s2', 2.0);
INSERT INTO readings VALUES ('s3', 3.0);
INSERT INTO readings VALUES ('s4', 4.0);
CALL sys.create_tag(`table` => 'retention_demo.readings', tag => 'first', snapshot => 1);

-- A dry run answers, as Paimon does, how many snapshots would go; with detail => true, the
-- summary row (snapshots, files, bytes), then what would go and, for what stays, why.
CALL sys.expire_snapshots(`table` => 'retention_demo.readings', retain_max => 2, dry_run => true);
CALL sys.expire_snapshots(`table` => 'retention_demo.readings', retain_max => 2, dry_run => true, detail => true);

-- Expire for real: snapshots 1 and 2 go, with every file nothing else needs.
CALL sys.expire_snapshots(`table` => 'retention_demo.readings', retain_max => 2);
SELECT snapshot_id FROM `readings$snapshots` ORDER BY snapshot_id;

-- The tag kept snapshot 1's files: it still reads.
SELECT sensor, reading FROM readings VERSION AS OF 'first';

-- The retention mark moves to the newest snapshot committed at or before now - retention.time
-- (a snapshot's commit time, never the caller's clock) and never backwards. Time travel below it
-- (snapshot 3, the tag 'first') is now refused with an error naming the mark.
CALL sys.retention_mark(`table` => 'retention_demo.readings');
CALL system$retention_mark(retention_demo, readings);   -- Databend's spelling: same mark, not moved

-- What keeps each snapshot, tag and file alive, and whether the next expiration may take it.
SELECT object_type, name, behind_retention_mark, collectable_now
FROM `readings$retention`
WHERE object_type IN ('snapshot', 'tag')
ORDER BY object_type, name;

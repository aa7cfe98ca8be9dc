-- Tags name a snapshot and keep it readable for as long as the tag lives; rollback restores one.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS tag_demo CASCADE;
CREATE DATABASE tag_demo;
USE tag_demo;

CREATE TABLE stock (item STRING, qty INT, PRIMARY KEY (item) NOT ENFORCED);
INSERT INTO stock VALUES ('apple', 10), ('pear', 5);
CALL sys.create_tag(`table` => 'tag_demo.stock', tag => 'opening');   -- tags the latest snapshot

INSERT INTO stock VALUES ('apple', 7), ('plum', 12);
DELETE FROM stock WHERE item = 'pear';
SELECT tag_name, snapshot_id, record_count FROM `stock$tags`;

-- Read the tagged state by name, next to the current one.
SELECT 'opening' AS state, item, qty FROM stock VERSION AS OF 'opening'
UNION ALL
SELECT 'now', item, qty FROM stock
ORDER BY state, item;

-- Put the table back to the tag: metadata only, as a new snapshot; the replaced head is kept
-- as the tag rollback-backup-<id>, so nothing is lost.
CALL sys.rollback(`table` => 'tag_demo.stock', version => 'opening');
SELECT tag_name FROM `stock$tags` ORDER BY tag_name;

SELECT item, qty FROM stock ORDER BY item;

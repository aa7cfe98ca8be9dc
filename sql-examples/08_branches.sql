-- A branch is a table's second line of history: try changes there, then fast-forward main.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS branch_demo CASCADE;
CREATE DATABASE branch_demo;
USE branch_demo;

CREATE TABLE prices (item STRING, price DOUBLE, PRIMARY KEY (item) NOT ENFORCED);
INSERT INTO prices VALUES ('tea', 3.0), ('coffee', 4.0);
ALTER TABLE prices CREATE TAG launch;

-- The branch starts from the tag; it reads and writes like a table of its own.
ALTER TABLE prices CREATE BRANCH repricing FROM TAG launch;
UPDATE `prices$branch_repricing` SET price = price * 1.1 WHERE item = 'coffee';
INSERT INTO `prices$branch_repricing` VALUES ('cocoa', 3.8);
SHOW BRANCHES prices;

-- Main is untouched until the branch is merged into it.
SELECT 'main' AS line, item, price FROM prices
UNION ALL
SELECT 'repricing', item, price FROM `prices$branch_repricing`
ORDER BY line, item;

-- fast_forward gives main the branch's content as one new snapshot (atomic for readers).
CALL sys.fast_forward(`table` => 'branch_demo.prices', branch => 'repricing');
ALTER TABLE prices DROP BRANCH repricing;

-- replace_main gives main the branch's content *and schema*, even when main has moved on
-- meanwhile (fast_forward refuses when main's schema changed). Main's rows of the moment are
-- kept in the tag replace-main-backup-<old head id> (unless keep_backup => false).
ALTER TABLE prices CREATE TAG merged;
ALTER TABLE prices CREATE BRANCH sizes FROM TAG merged;  -- without FROM a branch starts empty
ALTER TABLE `prices$branch_sizes` ADD COLUMN size STRING;
UPDATE `prices$branch_sizes` SET size = 'cup';
INSERT INTO prices VALUES ('juice', 2.5);  -- main moves on; the replacement supersedes it
CALL sys.replace_main(`table` => 'branch_demo.prices', branch => 'sizes');
ALTER TABLE prices DROP BRANCH sizes;

SELECT item, round(price, 2) AS price, size FROM prices ORDER BY item;

-- A branch is a table's second line of history: try changes there, then fast-forward main.

CREATE DATABASE IF NOT EXISTS branch_demo;
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

SELECT item, round(price, 2) AS price FROM prices ORDER BY item;

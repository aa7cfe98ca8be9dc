-- dyntable quickstart: the managed-table design's example, end to end.
-- Run it with:  dyntable-sql -f sql-examples/01_quickstart.sql
-- Tables are created in the warehouse (default ./warehouse) in the Apache Paimon format.

-- Each run starts from a clean database, so the example can be run again and again.
DROP DATABASE IF EXISTS quickstart CASCADE;
CREATE DATABASE quickstart;
USE quickstart;

-- Source tables: orders (append-only, partitioned by day) and a category dimension keyed by auction.
CREATE TABLE orders (
  order_id     BIGINT,
  auction_id   BIGINT,
  trans_amount BIGINT,
  create_time  TIMESTAMP,
  dt           STRING
) PARTITIONED BY (dt);

CREATE TABLE category_dim (
  auction_id  BIGINT,
  category_id BIGINT,
  PRIMARY KEY (auction_id) NOT ENFORCED
);

INSERT INTO orders VALUES
  (1, 100, 25,  TIMESTAMP '2024-05-01 09:30:00', '2024-05-01'),
  (2, 101, 40,  TIMESTAMP '2024-05-01 11:00:00', '2024-05-01'),
  (3, 100, 15,  TIMESTAMP '2024-05-02 08:15:00', '2024-05-02'),
  (4, 102, 60,  TIMESTAMP '2024-05-02 17:45:00', '2024-05-02');

INSERT INTO category_dim VALUES (100, 7), (101, 8);

-- The managed table: just business fields, no connector options. It is both a snapshot you
-- query in batch and a changelog you can stream from.
CREATE TABLE intermediate_table (
  order_id     BIGINT,
  auction_id   BIGINT,
  category_id  BIGINT,
  trans_amount BIGINT,
  create_time  TIMESTAMP,
  dt           STRING
) PARTITIONED BY (dt);

INSERT INTO intermediate_table
SELECT A.order_id, A.auction_id, B.category_id, A.trans_amount, A.create_time,
       DATE_FORMAT(A.create_time, 'yyyy-MM-dd')
FROM orders A LEFT JOIN category_dim B ON A.auction_id = B.auction_id;

-- Batch ad-hoc query.
SELECT dt, category_id, SUM(trans_amount) AS amount, COUNT(*) AS orders
FROM intermediate_table
GROUP BY dt, category_id
ORDER BY dt, category_id;

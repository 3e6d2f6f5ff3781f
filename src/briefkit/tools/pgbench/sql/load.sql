-- TPC-C-like initial population (TPC-C clause 4.3.3), generated server-side with
-- generate_series, then keys, indexes and statistics. Run with psql after schema.sql:
--   psql -X -v ON_ERROR_STOP=1 -v warehouses=W -v items=I -v customers=C -f load.sql
-- items: rows in item and stock rows per warehouse (the specification's 100000);
-- customers: customers per district and initial orders per district (the specification's 3000).
-- Random values are drawn with a fixed setseed, so a load is repeatable for the same scale
-- (random() is parallel restricted: these statements run in one backend, in order).
\set ON_ERROR_STOP on
SELECT setseed(0.271828);

-- Random a-string of length lo..hi (hexadecimal characters).
CREATE OR REPLACE FUNCTION pg_temp.astring(lo integer, hi integer) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT substr(repeat(md5(random()::text), 16), 1, lo + floor(random() * (hi - lo + 1))::integer)
$$;
-- i_data / s_data: 26..50 characters, 10 % of them containing 'ORIGINAL' (clause 4.3.3.1).
CREATE OR REPLACE FUNCTION pg_temp.data_string() RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN random() < 0.1
                THEN overlay(s PLACING 'ORIGINAL' FROM 1 + floor(random() * (length(s) - 7))::integer)
                ELSE s END
    FROM (SELECT pg_temp.astring(26, 50) AS s) AS d
$$;
CREATE OR REPLACE FUNCTION pg_temp.zip() RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT lpad(floor(random() * 10000)::integer::text, 4, '0') || '11111'
$$;

-- The last 30 % of each district's orders are undelivered (2101..3000 at full scale).
SELECT :customers - :customers * 3 / 10 + 1 AS first_new_order \gset

INSERT INTO item
SELECT i, 1 + floor(random() * 10000)::integer, pg_temp.astring(14, 24),
       round((1 + random() * 99)::numeric, 2), pg_temp.data_string()
FROM generate_series(1, :items) AS i;

INSERT INTO warehouse
SELECT w, pg_temp.astring(6, 10), pg_temp.astring(10, 20), pg_temp.astring(10, 20),
       pg_temp.astring(10, 20), pg_temp.astring(2, 2), pg_temp.zip(),
       round((random() * 0.2)::numeric, 4), 300000
FROM generate_series(1, :warehouses) AS w;

INSERT INTO district
SELECT d, w, pg_temp.astring(6, 10), pg_temp.astring(10, 20), pg_temp.astring(10, 20),
       pg_temp.astring(10, 20), pg_temp.astring(2, 2), pg_temp.zip(),
       round((random() * 0.2)::numeric, 4), 30000, :customers + 1
FROM generate_series(1, :warehouses) AS w, generate_series(1, 10) AS d;

-- c_last: the first 1000 customers of a district take names 0..999 in order, the others
-- NURand(255, 0, 999) (clause 4.3.2.3), so every name below min(1000, customers) exists in
-- every district and the scripts' by-name lookups always find someone.
INSERT INTO customer
SELECT c, d, w, pg_temp.astring(8, 16), 'OE',
       tpcc_last_name(CASE WHEN c <= 1000 THEN c - 1
                           ELSE ((floor(random() * 256)::integer | floor(random() * 1000)::integer) + 157) % 1000 END),
       pg_temp.astring(10, 20), pg_temp.astring(10, 20), pg_temp.astring(10, 20),
       pg_temp.astring(2, 2), pg_temp.zip(), lpad(floor(random() * 1e16)::bigint::text, 16, '0'),
       now(), CASE WHEN random() < 0.1 THEN 'BC' ELSE 'GC' END, 50000,
       round((random() * 0.5)::numeric, 4), -10, 10, 1, 0, pg_temp.astring(300, 500)
FROM generate_series(1, :warehouses) AS w, generate_series(1, 10) AS d, generate_series(1, :customers) AS c;

INSERT INTO history
SELECT c, d, w, d, w, now(), 10, pg_temp.astring(12, 24)
FROM generate_series(1, :warehouses) AS w, generate_series(1, 10) AS d, generate_series(1, :customers) AS c;

-- One order per customer, customers in a random permutation of order ids (clause 4.3.3.1).
INSERT INTO orders
SELECT o, d, w, c, now(),
       CASE WHEN o < :first_new_order THEN 1 + floor(random() * 10)::integer END,
       5 + floor(random() * 11)::integer, 1
FROM (SELECT w, d, c, row_number() OVER (PARTITION BY w, d ORDER BY random()) AS o
      FROM generate_series(1, :warehouses) AS w, generate_series(1, 10) AS d,
           generate_series(1, :customers) AS c) AS permuted;

INSERT INTO order_line
SELECT o_id, o_d_id, o_w_id, n, 1 + floor(random() * :items)::integer, o_w_id,
       CASE WHEN o_id < :first_new_order THEN o_entry_d END, 5,
       CASE WHEN o_id < :first_new_order THEN 0 ELSE round((0.01 + random() * 9999.98)::numeric, 2) END,
       pg_temp.astring(24, 24)
FROM orders, generate_series(1, o_ol_cnt) AS n;

INSERT INTO new_order
SELECT o_id, o_d_id, o_w_id FROM orders WHERE o_id >= :first_new_order;

INSERT INTO stock
SELECT i, w, 10 + floor(random() * 91)::integer,
       pg_temp.astring(24, 24), pg_temp.astring(24, 24), pg_temp.astring(24, 24), pg_temp.astring(24, 24),
       pg_temp.astring(24, 24), pg_temp.astring(24, 24), pg_temp.astring(24, 24), pg_temp.astring(24, 24),
       pg_temp.astring(24, 24), pg_temp.astring(24, 24), 0, 0, 0, pg_temp.data_string()
FROM generate_series(1, :warehouses) AS w, generate_series(1, :items) AS i;

ALTER TABLE warehouse  ADD PRIMARY KEY (w_id);
ALTER TABLE district   ADD PRIMARY KEY (d_w_id, d_id);
ALTER TABLE customer   ADD PRIMARY KEY (c_w_id, c_d_id, c_id);
ALTER TABLE new_order  ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id);
ALTER TABLE orders     ADD PRIMARY KEY (o_w_id, o_d_id, o_id);
ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number);
ALTER TABLE item       ADD PRIMARY KEY (i_id);
ALTER TABLE stock      ADD PRIMARY KEY (s_w_id, s_i_id);
-- Payment and Order-Status by last name; Order-Status's last order of a customer.
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

VACUUM (ANALYZE);
CHECKPOINT;

-- Order-Status (TPC-C clause 2.6), read only. Variables from pgbench -D: warehouses,
-- customers, name_max. 60 % of customers are looked up by last name.
\set w_id random(1, :warehouses)
\set d_id random(1, 10)
\set by_name random(1, 100) <= 60
\set c_id ((random(0, 1023) | random(1, :customers)) + 259) % :customers + 1
\set name_no ((random(0, 255) | random(0, :name_max)) + 223) % (:name_max + 1)
BEGIN;
\if :by_name
SELECT c_id FROM (
    SELECT c_id, row_number() OVER (ORDER BY c_first) AS pos, count(*) OVER () AS n
      FROM customer
     WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = tpcc_last_name(:name_no)) AS same_name
 WHERE pos = (n + 1) / 2 \gset
\endif
SELECT c_balance, c_first, c_middle, c_last
  FROM customer WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
-- The customer's most recent order and its lines.
SELECT o_id, o_entry_d, o_carrier_id, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
  FROM (SELECT o_id, o_entry_d, o_carrier_id FROM orders
         WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id
         ORDER BY o_id DESC LIMIT 1) AS last_order
  JOIN order_line ON ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = o_id;
COMMIT;

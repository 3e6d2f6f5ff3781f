-- New-Order that rolls back (TPC-C clause 2.4.1.4): the same statements as new_order.sql, but
-- the last order line names the unused item id items + 1, which no item matches, and the
-- transaction ends with ROLLBACK. A separate script so that the log tells it apart.
\set w_id random(1, :warehouses)
\set d_id random(1, 10)
\set c_id ((random(0, 1023) | random(1, :customers)) + 259) % :customers + 1
\set ol_cnt random(5, 15)
\set lines_seed random(0, 2147483647)
BEGIN;
SELECT c_discount, c_last, c_credit, w_tax
  FROM customer JOIN warehouse ON w_id = c_w_id
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
UPDATE district SET d_next_o_id = d_next_o_id + 1
 WHERE d_w_id = :w_id AND d_id = :d_id
RETURNING d_next_o_id - 1 AS o_id, d_tax \gset
INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
SELECT :o_id, :d_id, :w_id, :c_id, now(), NULL, :ol_cnt, bool_and(supply_w_id = :w_id)::integer
  FROM tpcc_order_lines(:lines_seed, :ol_cnt, :w_id, :warehouses, :items, true);
INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (:o_id, :d_id, :w_id);
-- Lock the stock rows in key order first, so that concurrent New-Orders wait instead of deadlocking.
SELECT count(*) FROM (
    SELECT 1 FROM stock
      JOIN tpcc_order_lines(:lines_seed, :ol_cnt, :w_id, :warehouses, :items, true) AS l
        ON s_w_id = l.supply_w_id AND s_i_id = l.item_id
     ORDER BY s_w_id, s_i_id FOR UPDATE OF stock) AS locked;
UPDATE stock
   SET s_quantity = CASE WHEN s_quantity - l.qty >= 10 THEN s_quantity - l.qty ELSE s_quantity - l.qty + 91 END,
       s_ytd = s_ytd + l.qty, s_order_cnt = s_order_cnt + l.cnt, s_remote_cnt = s_remote_cnt + l.remote
  FROM (SELECT supply_w_id, item_id, sum(quantity) AS qty, count(*) AS cnt,
               count(*) FILTER (WHERE supply_w_id <> :w_id) AS remote
          FROM tpcc_order_lines(:lines_seed, :ol_cnt, :w_id, :warehouses, :items, true)
         GROUP BY supply_w_id, item_id) AS l
 WHERE s_w_id = l.supply_w_id AND s_i_id = l.item_id;
INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                        ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
SELECT :o_id, :d_id, :w_id, l.ol_number, l.item_id, l.supply_w_id, NULL, l.quantity, l.quantity * i_price,
       (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05,
              s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id]
  FROM tpcc_order_lines(:lines_seed, :ol_cnt, :w_id, :warehouses, :items, true) AS l
  JOIN item ON i_id = l.item_id
  JOIN stock ON s_w_id = l.supply_w_id AND s_i_id = l.item_id;
ROLLBACK;

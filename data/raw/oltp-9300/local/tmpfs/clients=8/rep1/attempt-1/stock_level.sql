-- Stock-Level (TPC-C clause 2.8), read only: distinct items of the district's last 20 orders
-- whose stock is below a threshold of 10..20.
\set w_id random(1, :warehouses)
\set d_id random(1, 10)
\set threshold random(10, 20)
BEGIN;
SELECT count(DISTINCT s_i_id) AS low_stock
  FROM district
  JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id
                 AND ol_o_id >= d_next_o_id - 20 AND ol_o_id < d_next_o_id
  JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
 WHERE d_w_id = :w_id AND d_id = :d_id AND s_quantity < :threshold;
COMMIT;

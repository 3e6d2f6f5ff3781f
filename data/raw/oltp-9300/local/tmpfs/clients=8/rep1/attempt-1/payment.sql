-- Payment (TPC-C clause 2.5). Variables from pgbench -D: warehouses, customers, name_max
-- (the highest customer last-name number that exists in every district).
-- 85 % of customers pay through their home warehouse; 60 % are looked up by last name.
\set w_id random(1, :warehouses)
\set d_id random(1, 10)
\set remote :warehouses > 1 AND random(1, 100) > 85
\set c_w_id CASE WHEN :remote THEN (:w_id + random(0, :warehouses - 2)) % :warehouses + 1 ELSE :w_id END
\set c_d_id CASE WHEN :remote THEN random(1, 10) ELSE :d_id END
\set by_name random(1, 100) <= 60
\set c_id ((random(0, 1023) | random(1, :customers)) + 259) % :customers + 1
\set name_no ((random(0, 255) | random(0, :name_max)) + 223) % (:name_max + 1)
\set h_amount random(100, 500000) / 100.0
BEGIN;
UPDATE warehouse SET w_ytd = w_ytd + :h_amount WHERE w_id = :w_id;
UPDATE district SET d_ytd = d_ytd + :h_amount WHERE d_w_id = :w_id AND d_id = :d_id;
\if :by_name
-- The customer in the middle (rounded up) of those with this last name, sorted by first name.
SELECT c_id FROM (
    SELECT c_id, row_number() OVER (ORDER BY c_first) AS pos, count(*) OVER () AS n
      FROM customer
     WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_last = tpcc_last_name(:name_no)) AS same_name
 WHERE pos = (n + 1) / 2 \gset
\endif
UPDATE customer
   SET c_balance = c_balance - :h_amount, c_ytd_payment = c_ytd_payment + :h_amount,
       c_payment_cnt = c_payment_cnt + 1,
       c_data = CASE WHEN c_credit = 'BC'
                     THEN left(concat_ws(' ', c_id, c_d_id, c_w_id, :d_id::integer, :w_id::integer,
                                         :h_amount::numeric, c_data), 500)
                     ELSE c_data END
 WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id;
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
SELECT :c_id, :c_d_id, :c_w_id, :d_id, :w_id, now(), :h_amount, w_name || '    ' || d_name
  FROM warehouse JOIN district ON d_w_id = w_id
 WHERE w_id = :w_id AND d_id = :d_id;
COMMIT;

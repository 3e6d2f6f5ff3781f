-- Delivery (TPC-C clause 2.7), run in the foreground like the other transactions: for each of
-- the warehouse's 10 districts, the oldest undelivered order is delivered (a district with none
-- is skipped, as the specification allows). One statement; districts are taken in order 1..10,
-- so two concurrent Deliveries of a warehouse queue instead of deadlocking.
\set w_id random(1, :warehouses)
\set carrier_id random(1, 10)
BEGIN;
WITH oldest AS (
    SELECT d, (SELECT min(no_o_id) FROM new_order WHERE no_w_id = :w_id AND no_d_id = d) AS o_id
      FROM generate_series(1, 10) AS d
), delivered AS (
    DELETE FROM new_order USING oldest
     WHERE no_w_id = :w_id AND no_d_id = oldest.d AND no_o_id = oldest.o_id
    RETURNING no_d_id, no_o_id
), carried AS (
    UPDATE orders SET o_carrier_id = :carrier_id
      FROM delivered
     WHERE o_w_id = :w_id AND o_d_id = no_d_id AND o_id = no_o_id
    RETURNING o_d_id, o_id, o_c_id
), lines AS (
    UPDATE order_line SET ol_delivery_d = now()
      FROM delivered
     WHERE ol_w_id = :w_id AND ol_d_id = no_d_id AND ol_o_id = no_o_id
    RETURNING ol_d_id, ol_o_id, ol_amount
)
UPDATE customer
   SET c_balance = c_balance + due.amount, c_delivery_cnt = c_delivery_cnt + 1
  FROM (SELECT o_d_id, o_c_id, sum(ol_amount) AS amount
          FROM carried JOIN lines ON ol_d_id = o_d_id AND ol_o_id = o_id
         GROUP BY o_d_id, o_c_id) AS due
 WHERE c_w_id = :w_id AND c_d_id = due.o_d_id AND c_id = due.o_c_id;
COMMIT;

-- TPC-C-like schema: the nine tables of the TPC-C specification (clause 1.3), written for
-- PostgreSQL. Primary keys and secondary indexes are created at the end of load.sql,
-- which is faster than maintaining them row by row.
-- Money is numeric with two decimals, as the specification's "signed numeric(12,2)".

DROP TABLE IF EXISTS order_line, new_order, orders, history, customer, stock, item, district, warehouse CASCADE;

CREATE TABLE warehouse (
    w_id       integer       NOT NULL,
    w_name     varchar(10)   NOT NULL,
    w_street_1 varchar(20)   NOT NULL,
    w_street_2 varchar(20)   NOT NULL,
    w_city     varchar(20)   NOT NULL,
    w_state    char(2)       NOT NULL,
    w_zip      char(9)       NOT NULL,
    w_tax      numeric(4,4)  NOT NULL,
    w_ytd      numeric(12,2) NOT NULL
);

CREATE TABLE district (
    d_id        integer       NOT NULL,
    d_w_id      integer       NOT NULL,
    d_name      varchar(10)   NOT NULL,
    d_street_1  varchar(20)   NOT NULL,
    d_street_2  varchar(20)   NOT NULL,
    d_city      varchar(20)   NOT NULL,
    d_state     char(2)       NOT NULL,
    d_zip       char(9)       NOT NULL,
    d_tax       numeric(4,4)  NOT NULL,
    d_ytd       numeric(12,2) NOT NULL,
    d_next_o_id integer       NOT NULL
);

CREATE TABLE customer (
    c_id           integer       NOT NULL,
    c_d_id         integer       NOT NULL,
    c_w_id         integer       NOT NULL,
    c_first        varchar(16)   NOT NULL,
    c_middle       char(2)       NOT NULL,
    c_last         varchar(16)   NOT NULL,
    c_street_1     varchar(20)   NOT NULL,
    c_street_2     varchar(20)   NOT NULL,
    c_city         varchar(20)   NOT NULL,
    c_state        char(2)       NOT NULL,
    c_zip          char(9)       NOT NULL,
    c_phone        char(16)      NOT NULL,
    c_since        timestamp     NOT NULL,
    c_credit       char(2)       NOT NULL,
    c_credit_lim   numeric(12,2) NOT NULL,
    c_discount     numeric(4,4)  NOT NULL,
    c_balance      numeric(12,2) NOT NULL,
    c_ytd_payment  numeric(12,2) NOT NULL,
    c_payment_cnt  integer       NOT NULL,
    c_delivery_cnt integer       NOT NULL,
    c_data         varchar(500)  NOT NULL
);

-- The specification gives history no primary key.
CREATE TABLE history (
    h_c_id   integer      NOT NULL,
    h_c_d_id integer      NOT NULL,
    h_c_w_id integer      NOT NULL,
    h_d_id   integer      NOT NULL,
    h_w_id   integer      NOT NULL,
    h_date   timestamp    NOT NULL,
    h_amount numeric(6,2) NOT NULL,
    h_data   varchar(24)  NOT NULL
);

CREATE TABLE new_order (
    no_o_id integer NOT NULL,
    no_d_id integer NOT NULL,
    no_w_id integer NOT NULL
);

CREATE TABLE orders (
    o_id         integer   NOT NULL,
    o_d_id       integer   NOT NULL,
    o_w_id       integer   NOT NULL,
    o_c_id       integer   NOT NULL,
    o_entry_d    timestamp NOT NULL,
    o_carrier_id integer,
    o_ol_cnt     integer   NOT NULL,
    o_all_local  integer   NOT NULL
);

CREATE TABLE order_line (
    ol_o_id        integer      NOT NULL,
    ol_d_id        integer      NOT NULL,
    ol_w_id        integer      NOT NULL,
    ol_number      integer      NOT NULL,
    ol_i_id        integer      NOT NULL,
    ol_supply_w_id integer      NOT NULL,
    ol_delivery_d  timestamp,
    ol_quantity    integer      NOT NULL,
    ol_amount      numeric(6,2) NOT NULL,
    ol_dist_info   char(24)     NOT NULL
);

CREATE TABLE item (
    i_id    integer      NOT NULL,
    i_im_id integer      NOT NULL,
    i_name  varchar(24)  NOT NULL,
    i_price numeric(5,2) NOT NULL,
    i_data  varchar(50)  NOT NULL
);

CREATE TABLE stock (
    s_i_id       integer     NOT NULL,
    s_w_id       integer     NOT NULL,
    s_quantity   integer     NOT NULL,
    s_dist_01    char(24)    NOT NULL,
    s_dist_02    char(24)    NOT NULL,
    s_dist_03    char(24)    NOT NULL,
    s_dist_04    char(24)    NOT NULL,
    s_dist_05    char(24)    NOT NULL,
    s_dist_06    char(24)    NOT NULL,
    s_dist_07    char(24)    NOT NULL,
    s_dist_08    char(24)    NOT NULL,
    s_dist_09    char(24)    NOT NULL,
    s_dist_10    char(24)    NOT NULL,
    s_ytd        integer     NOT NULL,
    s_order_cnt  integer     NOT NULL,
    s_remote_cnt integer     NOT NULL,
    s_data       varchar(50) NOT NULL
);

-- Customer last name from a number 0..999 (clause 4.3.2.3): three syllables, one per digit.
CREATE OR REPLACE FUNCTION tpcc_last_name(n integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT s[n / 100 + 1] || s[n / 10 % 10 + 1] || s[n % 10 + 1]
    FROM (SELECT ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'] AS s) AS syllables
$$;

-- Deterministic integer in lo..hi drawn from (seed, n, salt). The New-Order script draws one
-- seed with pgbench's seeded random() and expands it into its order lines here, so that a run
-- with --random-seed is repeatable and the script needs no loop. hashint8extended is the
-- hash behind hash partitioning, which PostgreSQL keeps stable across versions.
CREATE OR REPLACE FUNCTION tpcc_draw(seed bigint, n integer, salt integer, lo integer, hi integer)
RETURNS integer LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT lo + (((hashint8extended(n::bigint * 131 + salt, seed) % (hi - lo + 1)) + (hi - lo + 1)) % (hi - lo + 1))::integer
$$;

-- The order lines of one New-Order (clause 2.4.1.5): ol_cnt lines, item ids NURand(8191, 1,
-- items), 1 % of supply warehouses remote when there is more than one warehouse, quantity 1..10.
-- With rollback = true the last line gets the unused item id items + 1 (clause 2.4.1.4).
CREATE OR REPLACE FUNCTION tpcc_order_lines(seed bigint, ol_cnt integer, home_w_id integer,
                                            warehouses integer, items integer, rollback boolean)
RETURNS TABLE (ol_number integer, item_id integer, supply_w_id integer, quantity integer)
-- ROWS 10 (the mean order size): the default estimate of 1000 rows makes the planner scan stock
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 10 AS $$
    SELECT n,
           CASE WHEN rollback AND n = ol_cnt THEN items + 1
                ELSE ((tpcc_draw(seed, n, 1, 0, 8191) | tpcc_draw(seed, n, 2, 1, items)) + 7911) % items + 1
           END,
           CASE WHEN warehouses > 1 AND tpcc_draw(seed, n, 3, 1, 100) = 1
                THEN (home_w_id + tpcc_draw(seed, n, 4, 0, warehouses - 2)) % warehouses + 1
                ELSE home_w_id
           END,
           tpcc_draw(seed, n, 5, 1, 10)
    FROM generate_series(1, ol_cnt) AS n
$$;

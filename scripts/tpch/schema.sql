-- scripts/tpch/schema.sql -- the TPC-H-shaped schema of the accuracy run
-- (scripts/bench.sh --tpch): eight tables in schema tpch of the bench
-- database.  scripts/tpch/load.sh runs this, then data.sql fills the
-- tables, then keys.sql adds the keys and indexes (after the load: one
-- index build per key instead of row-by-row maintenance and checks).
--
-- Keys (keys.sql): every table has its primary key, and the foreign keys the queries
-- join on are declared, so the planner sees the same uniqueness a real
-- schema of this shape has.  Two secondary indexes, each there to give the
-- plans a node shape the run must cover:
--   orders (o_custkey)    parameterised index scans under a nested loop
--                         (customer -> orders), a node with many loops
--                         whose first call per loop is always timed
--   lineitem (l_partkey)  the same from part into lineitem, and the
--                         correlated per-part subqueries (SubPlan loops)
-- The rest of the access is sequential scans, hash and merge joins, sorts
-- and aggregates, as on a warehouse without tuning.

DROP SCHEMA IF EXISTS tpch CASCADE;
CREATE SCHEMA tpch;
SET search_path = tpch;

-- deterministic pseudo-random numbers in [0, 1): a hash of a key and a
-- salt.  hashint8extended is the hash that hash partitioning keeps stable
-- across releases and platforms, so the same scale gives the same data on
-- every PostgreSQL the bench runs on.
CREATE FUNCTION rnd(k bigint, salt bigint) RETURNS float8
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$ SELECT (hashint8extended(k, salt) & 140737488355327)::float8 / 140737488355328 $$;

-- an integer in [lo, hi]
CREATE FUNCTION rint(k bigint, salt bigint, lo int, hi int) RETURNS int
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$ SELECT lo + floor(tpch.rnd(k, salt) * (hi - lo + 1))::int $$;

-- one of the words of an array
CREATE FUNCTION pick(k bigint, salt bigint, words text[]) RETURNS text
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$ SELECT words[1 + floor(tpch.rnd(k, salt) * cardinality(words))::int] $$;

-- a short comment of n words from a fixed vocabulary
CREATE FUNCTION blurb(k bigint, salt bigint, n int) RETURNS text
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$ SELECT string_agg(tpch.pick(k, salt * 16 + i,
			ARRAY['quick', 'slow', 'careful', 'bold', 'final', 'pending', 'special',
				  'regular', 'ironic', 'silent', 'express', 'even', 'requests',
				  'deposits', 'packages', 'accounts', 'theodolites', 'pinto',
				  'beans', 'foxes', 'asymptotes', 'ideas', 'complaints', 'sleep',
				  'nag', 'haggle', 'wake', 'cajole', 'boost', 'across']), ' ' ORDER BY i)
		 FROM generate_series(1, n) AS i $$;

CREATE TABLE region (
	r_regionkey int,
	r_name text NOT NULL,
	r_comment text NOT NULL
);

CREATE TABLE nation (
	n_nationkey int,
	n_name text NOT NULL,
	n_regionkey int NOT NULL,
	n_comment text NOT NULL
);

CREATE TABLE supplier (
	s_suppkey int,
	s_name text NOT NULL,
	s_address text NOT NULL,
	s_nationkey int NOT NULL,
	s_phone text NOT NULL,
	s_acctbal numeric(12, 2) NOT NULL,
	s_comment text NOT NULL
);

CREATE TABLE part (
	p_partkey int,
	p_name text NOT NULL,
	p_mfgr text NOT NULL,
	p_brand text NOT NULL,
	p_type text NOT NULL,
	p_size int NOT NULL,
	p_container text NOT NULL,
	p_retailprice numeric(12, 2) NOT NULL,
	p_comment text NOT NULL
);

CREATE TABLE partsupp (
	ps_partkey int NOT NULL,
	ps_suppkey int NOT NULL,
	ps_availqty int NOT NULL,
	ps_supplycost numeric(12, 2) NOT NULL,
	ps_comment text NOT NULL
);

CREATE TABLE customer (
	c_custkey int,
	c_name text NOT NULL,
	c_address text NOT NULL,
	c_nationkey int NOT NULL,
	c_phone text NOT NULL,
	c_acctbal numeric(12, 2) NOT NULL,
	c_mktsegment text NOT NULL,
	c_comment text NOT NULL
);

CREATE TABLE orders (
	o_orderkey int,
	o_custkey int NOT NULL,
	o_orderstatus char(1) NOT NULL,
	o_totalprice numeric(12, 2) NOT NULL,
	o_orderdate date NOT NULL,
	o_orderpriority text NOT NULL,
	o_clerk text NOT NULL,
	o_shippriority int NOT NULL,
	o_comment text NOT NULL
);

CREATE TABLE lineitem (
	l_orderkey int NOT NULL,
	l_partkey int NOT NULL,
	l_suppkey int NOT NULL,
	l_linenumber int NOT NULL,
	l_quantity numeric(12, 2) NOT NULL,
	l_extendedprice numeric(12, 2) NOT NULL,
	l_discount numeric(12, 2) NOT NULL,
	l_tax numeric(12, 2) NOT NULL,
	l_returnflag char(1) NOT NULL,
	l_linestatus char(1) NOT NULL,
	l_shipdate date NOT NULL,
	l_commitdate date NOT NULL,
	l_receiptdate date NOT NULL,
	l_shipinstruct text NOT NULL,
	l_shipmode text NOT NULL,
	l_comment text NOT NULL
);

-- what the data was generated with; load.sh rebuilds when it differs
CREATE TABLE meta (
	stamp text NOT NULL,
	scale numeric NOT NULL,
	loaded timestamptz NOT NULL DEFAULT now()
);

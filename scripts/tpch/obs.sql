-- scripts/tpch/obs.sql -- tpch_run.obs, what the TPC-H accuracy run
-- records (runner.sql appends to it) and report.sql reads; also loaded by
-- t/102, which feeds the report rows of its own.  Kept between runs, so
-- columns added later come through ALTER TABLE.
CREATE SCHEMA IF NOT EXISTS tpch_run;
-- one row per statement (node_id NULL: plain, untimed) or per plan node
CREATE TABLE IF NOT EXISTS tpch_run.obs (
	q int NOT NULL,
	mode text NOT NULL,
	run int NOT NULL,
	wall_ms float8 NOT NULL,
	exec_ms float8,
	node_id int,
	parent_id int,
	node_type text,
	relation text,
	loops numeric,
	total_ms float8,
	margin_ms float8,
	sampled_calls bigint,
	reliable boolean,
	every int,
	check_ms float8
);
ALTER TABLE tpch_run.obs ADD COLUMN IF NOT EXISTS check_ms float8;
-- mode profile: the node's ticks (its total_ms, their share of the run)
ALTER TABLE tpch_run.obs ADD COLUMN IF NOT EXISTS ticks bigint;

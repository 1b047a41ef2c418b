-- test/explain_nodes_profile.sql -- declares explain_nodes_profile(query,
-- hz), the library's timing_source_explain_nodes_profile(), in the first
-- schema of the search path: timing_source_explain_nodes()'s columns,
-- then each node's ticks of the profile and their share of the execution
-- time in ms.  A C entry point for benchmarks and tests, in no install
-- script (docs/internals.md); the TPC-H-shaped bench run and t/086 use it.
CREATE OR REPLACE FUNCTION explain_nodes_profile(
	query text, hz int,
	OUT node_id int, OUT parent_id int, OUT depth int, OUT node_type text,
	OUT relation text, OUT loops numeric, OUT rows numeric,
	OUT startup_ms numeric, OUT total_ms numeric, OUT sample_every int,
	OUT sampled_calls bigint, OUT margin_ms numeric,
	OUT estimate_reliable boolean, OUT overhead_ms numeric,
	OUT execution_ms numeric, OUT profile_ticks bigint, OUT profile_ms numeric)
	RETURNS SETOF record
	AS '$libdir/timing_source', 'timing_source_explain_nodes_profile'
	LANGUAGE C VOLATILE;

/*-------------------------------------------------------------------------
 *
 * compare.c
 *	  timing_source_compare(query, runs): runs a user's query plain, under
 *	  EXPLAIN (ANALYZE, TIMING OFF), and under EXPLAIN ANALYZE with the
 *	  system and the TSC clock sources, interleaved, each execution in a
 *	  subtransaction that is always rolled back, and reports the medians,
 *	  their ratios and the cost of one clock read.
 *
 * It checks that the query is one plain statement, runs it through SPI,
 * and reads the rows through the timed nodes from EXPLAIN's JSON.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/cmdtag.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "instrument.h"

PG_FUNCTION_INFO_V1(timing_source_compare);

#define TS_MAX_COMPARE_RUNS	100

typedef enum CompareMode
{
	MODE_PLAIN,
	MODE_OFF,
	MODE_SYSTEM,
	MODE_TSC,
	NUM_MODES
} CompareMode;

static const char *const compare_mode_names[] = {"plain", "timing off", "system", "tsc"};

/*
 * Report a syntax error in the query at its position in the query, not in
 * the statement that called timing_source_compare().
 */
static void
compare_parse_error_callback(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

/*
 * The query must be exactly one statement that EXPLAIN ANALYZE can run
 * and whose plan has nodes to time.  Syntax errors are the parser's own.
 * Returns the parsed statement.  "what" says which function checks, for
 * the message on a utility statement.
 */
RawStmt *
ts_check_query(const char *query, TsQueryCheck what)
{
	ErrorContextCallback errcallback;
	List	   *stmts;
	Node	   *stmt;
	const char *tag;

	errcallback.callback = compare_parse_error_callback;
	errcallback.arg = unconstify(char *, query);
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	stmts = pg_parse_query(query);
	error_context_stack = errcallback.previous;

	if (list_length(stmts) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query must contain exactly one statement"),
				 list_length(stmts) == 0 ?
				 errdetail("The query is empty.") :
				 errdetail("The query contains %d statements.",
						   list_length(stmts))));

	stmt = linitial_node(RawStmt, stmts)->stmt;
	tag = GetCommandTagName(CreateCommandTag(stmt));
	switch (nodeTag(stmt))
	{
		case T_SelectStmt:
			if (((SelectStmt *) stmt)->intoClause == NULL)
				return linitial_node(RawStmt, stmts);
			tag = "SELECT INTO";
			break;
		case T_InsertStmt:
		case T_UpdateStmt:
		case T_DeleteStmt:
		case T_MergeStmt:
			return linitial_node(RawStmt, stmts);
		default:
			break;
	}
	if (what == TS_CHECK_COMPARE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot compare timing of utility statement %s", tag),
				 errdetail("Only SELECT, VALUES, INSERT, UPDATE, DELETE and MERGE statements can be compared.")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot time the plan nodes of utility statement %s", tag),
			 errdetail("Only SELECT, VALUES, INSERT, UPDATE, DELETE and MERGE statements have plan nodes to time.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Sum of "Actual Rows" x "Actual Loops" over all plan nodes of an EXPLAIN
 * (FORMAT JSON) output: the rows that passed through timed nodes.
 */
static double
explain_json_rows(const char *json)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														CStringGetDatum(json)));
	JsonbIterator *it = JsonbIteratorInit(&jb->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	typedef struct
	{
		double		rows;
		double		loops;
		bool		have_rows;
		bool		have_loops;
	}			Frame;
	Frame	   *stack;
	int			depth = 0,
				maxdepth = 16;
	enum
	{
		KEY_OTHER, KEY_ROWS, KEY_LOOPS
	}			key = KEY_OTHER;
	double		total = 0;

	stack = palloc(sizeof(Frame) * maxdepth);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		switch (tok)
		{
			case WJB_BEGIN_OBJECT:
				if (++depth >= maxdepth)
				{
					maxdepth *= 2;
					stack = repalloc(stack, sizeof(Frame) * maxdepth);
				}
				memset(&stack[depth], 0, sizeof(Frame));
				key = KEY_OTHER;
				break;
			case WJB_END_OBJECT:
				if (stack[depth].have_rows && stack[depth].have_loops)
					total += stack[depth].rows * stack[depth].loops;
				depth--;
				break;
			case WJB_KEY:
				if (v.val.string.len == 11 &&
					strncmp(v.val.string.val, "Actual Rows", 11) == 0)
					key = KEY_ROWS;
				else if (v.val.string.len == 12 &&
						 strncmp(v.val.string.val, "Actual Loops", 12) == 0)
					key = KEY_LOOPS;
				else
					key = KEY_OTHER;
				break;
			case WJB_VALUE:
				if (key != KEY_OTHER && v.type == jbvNumeric && depth > 0)
				{
					double		d = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
																	   NumericGetDatum(v.val.numeric)));

					if (key == KEY_ROWS)
					{
						stack[depth].rows = d;
						stack[depth].have_rows = true;
					}
					else
					{
						stack[depth].loops = d;
						stack[depth].have_loops = true;
					}
				}
				key = KEY_OTHER;
				break;
			default:
				key = KEY_OTHER;
				break;
		}
	}
	pfree(stack);
	return total;
}

/* one run of compare(): what run_in_subxact() hands over */
typedef struct CompareRun
{
	const char *sql;
	double	   *rows;
} CompareRun;

static double
compare_run(void *arg)
{
	CompareRun *run = (CompareRun *) arg;
	SPIExecuteOptions options;
	uint64		t0,
				t1;
	int			rc;

	memset(&options, 0, sizeof(options));
	options.read_only = false;
	options.tcount = 0;
	if (run->rows == NULL)
		options.dest = None_Receiver;

	t0 = tsclock_system_ns();
	rc = SPI_execute_extended(run->sql, &options);
	t1 = tsclock_system_ns();
	if (rc < 0)
		elog(ERROR, "SPI_execute_extended failed: %s",
			 SPI_result_code_string(rc));

	if (run->rows != NULL)
	{
		char	   *json;

		if (SPI_tuptable == NULL || SPI_processed != 1)
			elog(ERROR, "unexpected EXPLAIN output");
		json = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		*run->rows = explain_json_rows(json);
	}
	return (double) (t1 - t0) / 1e6;
}

/*
 * Run sql once inside a subtransaction that is always rolled back, and
 * return its wall time in ms.  When rows is not NULL, the statement is an
 * EXPLAIN (FORMAT JSON) and *rows receives the rows through its nodes;
 * otherwise the results are discarded as they are produced.  SPI works in
 * the caller's memory context, which outlives the subtransaction.
 */
static double
run_in_subxact(const char *sql, double *rows)
{
	CompareRun	run;

	run.sql = sql;
	run.rows = rows;
	return ts_in_rolled_back_subxact(compare_run, &run, true);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median_of(double *v, int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	if (n % 2 == 1)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

Datum
timing_source_compare(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			runs = ts_check_runs(PG_GETARG_INT32(1), TS_MAX_COMPARE_RUNS);
	ReturnSetInfo *rsinfo;
	const char *sql[NUM_MODES];
	const char *options[NUM_MODES];
	double	   *times[NUM_MODES];
	double	   *overheads[NUM_MODES];
	int			noverheads[NUM_MODES];
	double		med[NUM_MODES];
	double	   *margins[NUM_MODES];	/* the top node's, in % of its total */
	bool		sampled[NUM_MODES];
	bool		have_margin[NUM_MODES];
	double		rows = -1;
	int			nmodes;
	int			nestlevel;
	GucContext	context = superuser() ? PGC_SUSET : PGC_USERSET;

	(void) ts_check_query(query, TS_CHECK_COMPARE);

	/*
	 * On 19+ the modes are set through core's timing_clock_source, which
	 * only superusers (or roles granted SET on it) may change, and whose
	 * TSC is core's: say so up front instead of failing half-way.
	 */
	if (ts_core_owns_setting &&
		pg_parameter_aclcheck("timing_clock_source", GetUserId(),
							  ACL_SET) != ACLCHECK_OK &&
		!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to set parameter \"%s\"",
						"timing_clock_source"),
				 errdetail("timing_source_compare() runs the query with each clock source in turn."),
				 errhint("Run it as a superuser, or GRANT SET ON PARAMETER timing_clock_source to the role.")));

	ts_ensure_detected();
	if (ts_core_owns_setting)
		nmodes = ts_core_tsc_khz() > 0 ? NUM_MODES : NUM_MODES - 1;
	else
		nmodes = tsclock_info.usable ? NUM_MODES : NUM_MODES - 1;

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	/*
	 * Each mode runs what a user of this major gets by default: no BUFFERS
	 * option, so buffer usage is measured from 18 on, as EXPLAIN ANALYZE
	 * does there; explain_options says what that was.
	 */
	sql[MODE_PLAIN] = query;
	sql[MODE_OFF] = psprintf("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON)\n%s", query);
	sql[MODE_SYSTEM] = psprintf("EXPLAIN (ANALYZE, FORMAT JSON)\n%s", query);
	sql[MODE_TSC] = sql[MODE_SYSTEM];
	options[MODE_PLAIN] = NULL;
	options[MODE_OFF] = "ANALYZE, TIMING OFF; BUFFERS " TS_EXPLAIN_BUFFERS_DEFAULT " (the default)";
	options[MODE_SYSTEM] = "ANALYZE; BUFFERS " TS_EXPLAIN_BUFFERS_DEFAULT " (the default)";
	options[MODE_TSC] = options[MODE_SYSTEM];
	/* sampled timing: with either clock wherever the wrappers are built */
	for (int m = 0; m < NUM_MODES; m++)
	{
		sampled[m] = (m == MODE_SYSTEM || m == MODE_TSC) &&
			ts_instrument_samples(m == MODE_TSC);
		have_margin[m] = sampled[m];
		if (sampled[m])
			options[m] = psprintf("%s; timing_source.sample_every = %d%s",
								  options[m], ts_sample_every,
								  ts_sample_budget > 0 ?
								  psprintf(", sample_budget = %d", ts_sample_budget) : "");
	}
	for (int m = 0; m < nmodes; m++)
	{
		times[m] = palloc(sizeof(double) * runs);
		margins[m] = palloc(sizeof(double) * runs);
		overheads[m] = palloc(sizeof(double) * runs);
		noverheads[m] = 0;
	}

	/*
	 * Settings made here are saved at our own GUC nest level and restored
	 * by AtEOXact_GUC below; on error, the abort of the enclosing
	 * (sub)transaction restores them, as for a function's SET clause.
	 */
	nestlevel = NewGUCNestLevel();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* interleave the modes, rotating the order on each repetition */
	for (int r = 0; r < runs; r++)
	{
		for (int j = 0; j < nmodes; j++)
		{
			CompareMode m = (CompareMode) ((j + r) % nmodes);

			if (m == MODE_SYSTEM || m == MODE_TSC)
				(void) set_config_option("timing_clock_source",
										 m == MODE_TSC ? "tsc" : "system",
										 context, PGC_S_SESSION,
										 GUC_ACTION_SAVE, true, 0, false);
			ts_forget_top_estimate();
			ts_reset_last_top_overhead();
			times[m][r] = run_in_subxact(sql[m],
										 (m == MODE_OFF && rows < 0) ? &rows : NULL);

			/*
			 * A sampled mode's top node: the margin of its total, which
			 * the mode shows only if every run had one
			 */
			if (have_margin[m])
			{
				TsSampleEstimate est;

				if (ts_last_top_estimate(&est) && est.reliable &&
					est.total_ns > 0)
					margins[m][r] = 100.0 * est.margin_ns / est.total_ns;
				else
					have_margin[m] = false;
			}

			/*
			 * The explained query's top node's estimate, made at its
			 * ExecutorFinish; only exactly timed runs through the wrappers
			 * have one (and then every run of the mode has).
			 */
			if ((m == MODE_SYSTEM || m == MODE_TSC) &&
				ts_last_top_overhead_ns() >= 0)
				overheads[m][noverheads[m]++] = ts_last_top_overhead_ns() / 1e6;
		}
	}

	SPI_finish();
	AtEOXact_GUC(true, nestlevel);

	for (int m = 0; m < nmodes; m++)
		med[m] = median_of(times[m], runs);

	for (int m = 0; m < nmodes; m++)
	{
		/*
		 * 1.0's definition has the first six columns only, 1.1-1.3's
		 * seven: the row has what the caller's definition asks for
		 */
		TupleDesc	desc = rsinfo->setDesc;
		Datum		values[9];
		bool		nulls[9] = {false, false, false, false, false, false, false, false, false};

		values[0] = CStringGetTextDatum(compare_mode_names[m]);
		values[1] = Int32GetDatum(runs);
		/* times[m] is sorted by median_of */
		values[2] = ts_fixed_datum(desc, 2, times[m][0], TS_MS_SCALE);
		values[3] = ts_fixed_datum(desc, 3, med[m], TS_MS_SCALE);
		if (med[MODE_OFF] > 0)
			values[4] = ts_fixed_datum(desc, 4, med[m] / med[MODE_OFF],
									   TS_RATIO_SCALE);
		else
			nulls[4] = true;

		/*
		 * Per row through timed nodes, per clock read (two per row), as
		 * docs/benchmark.md computes it.
		 */
		if ((m == MODE_SYSTEM || m == MODE_TSC) && rows > 0)
			values[5] = ts_fixed_datum(desc, 5,
									   (med[m] - med[MODE_OFF]) * 1e6 / (2.0 * rows),
									   TS_NS_SCALE);
		else
			nulls[5] = true;
		if (options[m] != NULL)
			values[6] = CStringGetTextDatum(options[m]);
		else
			nulls[6] = true;
		/* top_margin_pct: the median over the runs, sampled modes only */
		if (desc->natts > 7 && have_margin[m])
			values[7] = ts_fixed_datum(desc, 7, median_of(margins[m], runs),
									   TS_RATIO_SCALE);
		else
			nulls[7] = true;
		/* top_overhead_ms: the top node's estimated instrumentation cost */
		if (desc->natts > 8 && noverheads[m] == runs)
			values[8] = ts_fixed_datum(desc, 8, median_of(overheads[m], runs),
									   TS_MS_SCALE);
		else
			nulls[8] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	return (Datum) 0;
}

/*-------------------------------------------------------------------------
 *
 * query_list.c
 *	  Per-query state of the executor glue, keyed by QueryDesc: the
 *	  watchdog's (15-18) and the rebase's (19) entries.
 *
 * Hooks see one QueryDesc at ExecutorStart and again at ExecutorFinish or
 * ExecutorEnd, possibly with other queries started and ended in between
 * (a function called by the query runs its own).  An entry is allocated
 * in the query's memory and registers a reset callback there, so it
 * leaves the list whenever that memory goes, also when the query fails
 * and its ExecutorEnd never runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "instrument.h"

#ifdef TS_HAVE_EXECUTOR_HOOK

#include "nodes/execnodes.h"

void
ts_query_remove(TsQueryEntry *entry)
{
	TsQueryEntry **p;

	for (p = &entry->list->head; *p != NULL; p = &(*p)->next)
	{
		if (*p == entry)
		{
			*p = entry->next;
			return;
		}
	}
}

static void
ts_query_forget(void *arg)
{
	ts_query_remove((TsQueryEntry *) arg);
}

void *
ts_query_add(TsQueryList *list, QueryDesc *queryDesc, size_t size)
{
	MemoryContext cxt = queryDesc->estate->es_query_cxt;
	TsQueryEntry *entry;

	Assert(size >= sizeof(TsQueryEntry));
	entry = MemoryContextAllocZero(cxt, size);
	entry->queryDesc = queryDesc;
	entry->list = list;
	entry->cb.func = ts_query_forget;
	entry->cb.arg = entry;
	MemoryContextRegisterResetCallback(cxt, &entry->cb);
	entry->next = list->head;
	list->head = entry;
	return entry;
}

void *
ts_query_find(TsQueryList *list, QueryDesc *queryDesc)
{
	TsQueryEntry *entry;

	for (entry = list->head; entry != NULL; entry = entry->next)
	{
		if (entry->queryDesc == queryDesc)
			return entry;
	}
	return NULL;
}

#endif							/* TS_HAVE_EXECUTOR_HOOK */

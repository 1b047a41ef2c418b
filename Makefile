# timing_source -- PGXS build
#
#   make && make install        build and install against pg_config on PATH
#   make installcheck           pg_regress tests, test/sql and test/expected
#                               (needs a running server with timing_source in
#                               shared_preload_libraries), then t/*.pl through
#                               PGXS's prove_installcheck (servers of their
#                               own; TAP_TESTS= skips them)
#   make dist                   PGXN release zip (git archive of HEAD)
#   make unittest               clock core unit tests (no server needed),
#                               x86-64 build and TSC-compiled-out build

MODULE_big = timing_source
# one job a file (docs/internals.md); watchdog.c builds to nothing on 19,
# rebase.c on 15-18, explain.c before 18
OBJS = \
	src/compare.o \
	src/diagnostics.o \
	src/explain.o \
	src/instrument.o \
	src/overhead.o \
	src/plan_nodes.o \
	src/planid.o \
	src/profile.o \
	src/query_list.o \
	src/rebase.o \
	src/shared.o \
	src/timing_source.o \
	src/track.o \
	src/tsclock.o \
	src/watchdog.o \
	src/worker_sampling.o
EXTENSION = timing_source
DATA = $(wildcard sql/timing_source--*.sql)
PGFILEDESC = "timing_source - TSC-based executor timing"

# pg_regress tests (test/sql, test/expected), run in this order: init
# creates the extension and the helpers every later test uses, upgrade
# drops and re-creates the extension, so it comes last.  The order is this
# list's, not the names'.
REGRESS = init \
	instrument \
	instrument_bind \
	instrument_accuracy \
	instrument_startup \
	instrument_buffers \
	overhead \
	settings \
	tsc_calls \
	tsc_info \
	tsdiag_compare \
	tsdiag_errors \
	tsdiag_privileges \
	tsdiag_tsc \
	diag_shapes \
	diag_interrupt \
	explain_nodes \
	track \
	upgrade
REGRESS_OPTS = --inputdir=test
# Perl TAP tests (t/*.pl, PostgreSQL::Test::Cluster), run by installcheck
TAP_TESTS = 1

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare $(EXTRA_CFLAGS)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies (PostgreSQL's --enable-depend is for
# its own tree): a change to any header under src/ rebuilds every object,
# or an inline function changed there would keep its old copy in the
# objects that include it
$(OBJS): $(wildcard src/*.h)

# PostgreSQL 19 and later own timing_clock_source and the extension defines
# no clock setting of its own, so settings (the extension's own
# timing_clock_source and timing_source.clock_source) has nothing to test
# there; init checks what is true there instead.  There the wrappers also
# bind under core's system clock, and can be switched off:
# instrument_bind_core, which has nothing to test on 15-18.
ifeq ($(shell test $(MAJORVERSION) -ge 19 && echo yes),yes)
REGRESS := $(patsubst instrument_bind,instrument_bind instrument_bind_core,$(filter-out settings,$(REGRESS)))
endif

# Export only what PostgreSQL calls (see the map); GNU ld and compatibles
ifeq ($(PORTNAME),linux)
SHLIB_LINK += -Wl,--version-script=$(srcdir)/src/timing_source.map
$(shlib): src/timing_source.map
endif

# ---- clock core unit tests (plain C, no server) ----
UNIT_CC ?= cc
UNIT_CFLAGS = -O2 -g -std=gnu99 -Wall -Wextra -Wno-unused-parameter $(EXTRA_CFLAGS) -Isrc

test/unit/test_tsclock: test/unit/test_tsclock.c test/unit/tap.h src/tsclock.c src/tsclock.h
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ test/unit/test_tsclock.c src/tsclock.c -lm

test/unit/test_tsclock_nox86: test/unit/test_tsclock.c test/unit/tap.h src/tsclock.c src/tsclock.h
	$(UNIT_CC) $(UNIT_CFLAGS) -DTSCLOCK_NO_X86 -o $@ test/unit/test_tsclock.c src/tsclock.c -lm

# the AVX2 usage snapshots of the node wrappers (skips where not built or no AVX2)
test/unit/test_usage_snap: test/unit/test_usage_snap.c test/unit/tap.h src/usage_snap.h
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ test/unit/test_usage_snap.c

# the in-plan measurement of a timed call's cost (subtract_overhead)
test/unit/test_insitu: test/unit/test_insitu.c test/unit/tap.h src/insitu.h
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ test/unit/test_insitu.c -lm

.PHONY: unittest
unittest: test/unit/test_tsclock test/unit/test_tsclock_nox86 test/unit/test_usage_snap test/unit/test_insitu
	prove -v --exec '' test/unit/test_tsclock test/unit/test_tsclock_nox86 test/unit/test_usage_snap test/unit/test_insitu

EXTRA_CLEAN = test/unit/test_tsclock test/unit/test_tsclock_nox86 test/unit/test_usage_snap test/unit/test_insitu \
	test/unit/test_tsclock_arm64 test/unit/test_tsclock_arm64_nocounter

# ---- the same unit tests cross-compiled for arm64, run under qemu-user ----
#   make unittest-arm64     needs gcc-aarch64-linux-gnu and qemu-user(-static)
ARM64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= $(firstword $(shell command -v qemu-aarch64-static qemu-aarch64 2>/dev/null))

test/unit/test_tsclock_arm64: test/unit/test_tsclock.c test/unit/tap.h src/tsclock.c src/tsclock.h
	$(ARM64_CC) -static $(UNIT_CFLAGS) -o $@ test/unit/test_tsclock.c src/tsclock.c -lm

test/unit/test_tsclock_arm64_nocounter: test/unit/test_tsclock.c test/unit/tap.h src/tsclock.c src/tsclock.h
	$(ARM64_CC) -static $(UNIT_CFLAGS) -DTSCLOCK_NO_COUNTER -o $@ test/unit/test_tsclock.c src/tsclock.c -lm

.PHONY: unittest-arm64
unittest-arm64: test/unit/test_tsclock_arm64 test/unit/test_tsclock_arm64_nocounter
	@test -n "$(QEMU_AARCH64)" || { echo "no qemu-aarch64-static or qemu-aarch64 (apt-get install qemu-user-static)" >&2; exit 1; }
	prove -v --exec '$(QEMU_AARCH64)' test/unit/test_tsclock_arm64 test/unit/test_tsclock_arm64_nocounter

# ---- PGXN release: timing_source-VERSION.zip from git archive of HEAD ----
.PHONY: dist
dist:
	bash scripts/pgxn.sh dist

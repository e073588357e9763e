# attnscope — build, test, benchmark.
#
#   make            build ./attnscope
#   make run        build and open the default model
#   make test       build and run every test (unit, CLI, sanitizers)
#   make bench      benchmarks (not part of the tests)
#   make deps       install the Debian packages the build needs (as root)

CC      ?= cc
PKGS    := openblas jansson ncursesw readline sqlite3 libpcre2-8
TESTPKG := cmocka
WERROR  ?=
OPT     ?= -O2 -march=native
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -Wall -Wextra -Wno-unused-parameter $(WERROR) -fopenmp \
	   -Iinclude $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -fopenmp -lm

BUILD   ?= build
BIN     ?= attnscope
SRCS    := $(wildcard src/*.c)
LIBSRCS := $(filter-out src/main.c,$(SRCS))
OBJS    := $(LIBSRCS:src/%.c=$(BUILD)/%.o)
LIB     := $(BUILD)/libattnscope.a

TESTSRCS := $(wildcard tests/test_*.c)
TOOLSRCS := $(wildcard tests/tool_*.c)
TESTSUPP := $(filter-out $(TESTSRCS) $(TOOLSRCS),$(wildcard tests/*.c))
TESTBINS := $(TESTSRCS:tests/%.c=$(BUILD)/tests/%)
TOOLBINS := $(TOOLSRCS:tests/%.c=$(BUILD)/tests/%)
SUPPOBJS := $(TESTSUPP:tests/%.c=$(BUILD)/tests/%.o)

BENCHSRCS := $(wildcard bench/*.c)
BENCHBINS := $(BENCHSRCS:bench/%.c=$(BUILD)/bench/%)

MODEL   ?= shakespeare

.SECONDARY: $(SUPPOBJS)

.PHONY: all run test check test-asan bench deps models clean

all: $(BIN)

$(BIN): $(BUILD)/main.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(LIB): $(OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: src/%.c | $(BUILD)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/tests
	$(CC) $(CFLAGS) -Itests -c -o $@ $<

$(BUILD)/tests/test_%: tests/test_%.c $(SUPPOBJS) $(LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) -Itests -o $@ $< $(SUPPOBJS) $(LIB) $(LDLIBS) $(shell pkg-config --libs $(TESTPKG))

$(BUILD)/tests/tool_%: tests/tool_%.c $(SUPPOBJS) $(LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) -Itests -o $@ $< $(SUPPOBJS) $(LIB) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB) | $(BUILD)/bench
	$(CC) $(CFLAGS) -O3 -o $@ $< $(LIB) $(LDLIBS)

$(BUILD) $(BUILD)/tests $(BUILD)/bench:
	mkdir -p $@

run: deps $(BIN)
	./$(BIN) $(MODEL)

# Unit tests (cmocka) then end-to-end CLI tests; each prints its own summary
# and tests/run.sh prints the closing "N passed, N failed" line.
test: deps
	@$(MAKE) --no-print-directory check

check: $(BIN) $(TESTBINS) $(TOOLBINS)
	@ATTNSCOPE=./$(BIN) TOOLS=$(BUILD)/tests sh tests/run.sh $(TESTBINS)

# The whole suite again under AddressSanitizer + UBSan, in its own tree.
test-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan BIN=build-asan/attnscope \
		OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" check

bench: deps $(BENCHBINS)
	@for b in $(BENCHBINS); do $$b || exit 1; done

deps:
	@sh tests/deps.sh

clean:
	rm -rf build build-asan attnscope

-include $(OBJS:.o=.d) $(BUILD)/main.d

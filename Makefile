# attnscope — build, test, benchmark.
#
#   make            build ./attnscope
#   make run        build and open the default model
#   make test       build and run every test (unit and CLI)
#   make test-asan  the same under AddressSanitizer + UBSan
#   make bench      benchmarks (not part of the tests)
#   make figures    the PNG figures of docs/figures.md
#   make deps       install the Debian packages the build needs (as root)

CC      ?= cc
# librsvg-2.0 and cairo rasterise the SVG figures for export --format png
# (src/faces/export-png.c, the only file that includes their headers)
PKGS    := openblas jansson ncursesw readline sqlite3 libpcre2-8 zlib librsvg-2.0 cairo libcurl
TESTPKG := cmocka
WERROR  ?=
OPT     ?= -O2 -march=native -fvect-cost-model=dynamic
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -Wall -Wextra $(WERROR) -fopenmp-simd \
	   -Iinclude $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
# run with the OpenBLAS build we compiled against (the pthreads one): the
# system-wide libopenblas.so.0 may be switched to the OpenMP build, whose
# spinning pool is several times slower beside other work on two cores
comma   := ,
BLASDIR := $(shell pkg-config --variable=libdir openblas 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) \
	   $(patsubst %,-Wl$(comma)-rpath$(comma)%,$(BLASDIR)) -lm

BUILD   ?= build
BIN     ?= attnscope
# src/ is layered, each folder using only the ones before it (base, text,
# engine, formats, train, analysis, session, store, faces; tests/check-layers.sh)
LAYERS  := base text engine formats train analysis session store faces
SRCS    := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c))
LIBSRCS := $(filter-out src/faces/main.c,$(SRCS))
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

.PHONY: all run test check check-layers test-asan bench deps models figures clean

all: $(BIN)

$(BIN): $(BUILD)/faces/main.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(LIB): $(OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: src/%.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# cmocka's test functions take a state pointer most tests do not use
TESTFLAGS := -Itests -Wno-unused-parameter

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/tests
	$(CC) $(CFLAGS) $(TESTFLAGS) -c -o $@ $<

$(BUILD)/tests/test_%: tests/test_%.c $(SUPPOBJS) $(LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) $(TESTFLAGS) -o $@ $< $(SUPPOBJS) $(LIB) $(LDLIBS) $(shell pkg-config --libs $(TESTPKG))

$(BUILD)/tests/tool_%: tests/tool_%.c $(SUPPOBJS) $(LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) $(TESTFLAGS) -o $@ $< $(SUPPOBJS) $(LIB) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c bench/bench_common.h $(LIB) | $(BUILD)/bench
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
	@sh tests/check-layers.sh $(BUILD)
	@sh tests/check-length.sh
	@sh tests/check-comments.sh
	@ATTNSCOPE=./$(BIN) TOOLS=$(BUILD)/tests sh tests/run.sh $(TESTBINS)

# Modules depend one way (tests/check-layers.sh reads the object files).
check-layers: $(LIB)
	@sh tests/check-layers.sh $(BUILD)

# The whole suite again under AddressSanitizer + UBSan, in its own tree,
# for this CPU as the normal build is (-march=native: the AVX2 and AVX-512
# products run under the sanitizers too); tests/lsan.supp leaves out
# fontconfig's process-wide caches (PNG export).
test-asan: deps
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
		$(MAKE) --no-print-directory BUILD=build-asan BIN=build-asan/attnscope \
		OPT="-O1 -march=native -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" check

# every bench appends its verdicts (paired medians) to BENCHSUM; the table
# of them all is printed at the end.  LLAMA_BENCH=/path/to/llama-bench (a
# llama.cpp build of a person's own) adds the rows measured beside it, on
# GGUF files tool_mkgguf writes (bench/bench_llama.h).
BENCHSUM := $(BUILD)/bench/summary.tsv
bench: deps $(BENCHBINS) $(BUILD)/tests/tool_mkgguf
	@rm -f $(BENCHSUM)
	@for b in $(BENCHBINS); do BENCH_SUMMARY=$(BENCHSUM) $$b || exit 1; done
	@sh bench/summary.sh $(BENCHSUM)

deps:
	@sh tests/deps.sh

# The PNG figures docs/figures.md shows (docs/figures/figures.cmds).
figures: $(BIN)
	./$(BIN) --no-db -f docs/figures/figures.cmds

clean:
	rm -rf build build-asan build-fuzz attnscope

-include $(OBJS:.o=.d) $(BUILD)/faces/main.d $(SUPPOBJS:.o=.d) $(TESTBINS:=.d) $(TOOLBINS:=.d)

# ----------------------------------------------------------------- fuzzing
# make fuzz: builds every fuzz/fuzz_*.c with clang's libFuzzer, ASan and
# UBSan against the library sources (compiled again with clang into
# build-fuzz/obj, not the gcc library), then runs each for FUZZ_SECONDS
# seconds.  New inputs go to build-fuzz/corpus/NAME; the seeds of
# fuzz_NAME are fuzz/seeds/NAME when that directory exists, and
# sessions/demos for the targets that read command lines or text
# (FUZZDEMOS).  A crash leaves build-fuzz/crash-* and stops make.
FUZZ_SECONDS ?= 60
FUZZCC       ?= clang
FUZZDIR      := build-fuzz
FUZZSRCS     := $(wildcard fuzz/fuzz_*.c)
FUZZBINS     := $(FUZZSRCS:fuzz/%.c=$(FUZZDIR)/%)
FUZZOBJS     := $(LIBSRCS:src/%.c=$(FUZZDIR)/obj/%.o)
FUZZDEMOS    := fuzz_cmdsplit fuzz_script fuzz_script_model fuzz_tokenizer
FUZZFLAGS    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		-fno-sanitize-recover=undefined -std=c11 -fopenmp-simd -Iinclude \
		$(shell pkg-config --cflags $(PKGS) 2>/dev/null)

.PHONY: fuzz
.SECONDARY: $(FUZZOBJS)

fuzz: $(FUZZBINS)
	@for f in $(FUZZBINS); do \
		n=$$(basename $$f); \
		mkdir -p $(FUZZDIR)/corpus/$$n || exit 1; \
		seeds=; \
		if [ -d fuzz/seeds/$${n#fuzz_} ]; then seeds=$(CURDIR)/fuzz/seeds/$${n#fuzz_}; fi; \
		case " $(FUZZDEMOS) " in *" $$n "*) seeds="$$seeds $(CURDIR)/sessions/demos";; esac; \
		echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		$(CURDIR)/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(CURDIR)/$(FUZZDIR)/ \
			$(CURDIR)/$(FUZZDIR)/corpus/$$n $$seeds || exit 1; \
	done

$(FUZZDIR)/obj/%.o: src/%.c | $(FUZZDIR)/obj
	@mkdir -p $(@D)
	$(FUZZCC) $(FUZZFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZDIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz-common.h $(FUZZOBJS) | $(FUZZDIR)/obj
	$(FUZZCC) $(FUZZFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZOBJS) $(LDLIBS)

$(FUZZDIR)/obj:
	mkdir -p $@

-include $(FUZZOBJS:.o=.d)

# ------------------------------------------------------------------ models
# `make models` trains the shipped models into models/ from the corpora in
# $(CORPORA), two at a time with one thread each (make -j2 inside).
# Measured on the idle 2-core build machine, two runs side by side: a
# shakespeare step (8 x 256 tokens) takes ~0.19 s and a tang step (16 x 128)
# ~0.24 s, which puts a shakespeare model near 10 min (an estimate from
# those rates; the shipped shakespeare models, trained two at a time beside
# other work, took 29-31 min each; tang's 6000 steps 24 min 41 s and
# induction's 5000 6 min 27 s, each beside one other training run).
# Validation loss after 3000 steps: shakespeare 1.614 nats/char, gqa 1.612,
# mqa 1.610, postnorm 1.591, rmsnorm 1.625; tang 4.900, induction 1.950;
# gqa-uptrained 1.684 after its 150 steps from shakespeare.  The
# shakespeare recipe before RoPE and the repeated random strings (learned
# positions, plain windows) gave 1.628 and one labelled head on
# docs/models.md's text; this one gives previous-token, offset-2, delimiter
# and local heads there.  Runs train into
# $(BUILD)/models/ and are moved to models/ when complete; after a Ctrl-C
# the next `make models` resumes the interrupted run where it stopped.
# tang keeps every character seen >= 100 times (2719 of 9176, 2.8% of the
# text becomes <unk>); the rarest character of 床前明月光，疑是地上霜。
# 举头望明月，低头思故乡。 (床) occurs 1023 times, so all of them stay.
# The corpora ship in data/ (data/README.md): tang's compressed, which the
# trainer reads directly.
CORPORA        ?= data
MODELS_SHIPPED := shakespeare tang shakespeare-gqa shakespeare-mqa shakespeare-postnorm induction \
		  shakespeare-rmsnorm shakespeare-gqa-uptrained shakespeare-mlm
MODELS_ARCH    := --layers 4 --heads 4 --d-model 128 --norm layernorm --mlp gelu \
		  --seed 1337 --threads 1 --dtype f16 --val-every 250
MODELS_BASE    := $(MODELS_ARCH) --pos learned
MODELS_SHAKES  := $(MODELS_ARCH) --pos rope --data $(CORPORA)/tinyshakespeare.txt --context 256 \
		  --batch 8 --steps 3000 --lr 2.5e-3 --warmup 200 \
		  --repeat 1 --repeat-random --repeat-min 32 --repeat-max 96
MODELS_FLAGS_shakespeare          := $(MODELS_SHAKES)
MODELS_FLAGS_shakespeare-gqa      := $(MODELS_SHAKES) --kv-heads 2
MODELS_FLAGS_shakespeare-mqa      := $(MODELS_SHAKES) --kv-heads 1
MODELS_FLAGS_shakespeare-postnorm := $(MODELS_SHAKES) --placement post
MODELS_FLAGS_shakespeare-rmsnorm  := $(MODELS_SHAKES) --norm rmsnorm

# shakespeare-gqa-uptrained: shakespeare with its K/V heads mean-pooled to 2
# (what `attn gqa 2` runs), then trained on for 150 steps, 5% of the
# original 3000 (Ainslie et al. 2023 uptrain for 5%), on the same windows
# (a random span repeated in each) as the model it starts from.
MODELS_FLAGS_shakespeare-gqa-uptrained := --from models/shakespeare.safetensors --kv-heads 2 \
		--data $(CORPORA)/tinyshakespeare.txt --batch 8 --steps 150 --lr 1e-3 --warmup 15 \
		--repeat 1 --repeat-random --repeat-min 32 --repeat-max 96 \
		--seed 1337 --threads 1 --dtype f16 --val-every 50
models/shakespeare-gqa-uptrained.safetensors: | models/shakespeare.safetensors
MODELS_FLAGS_tang := $(MODELS_BASE) --data $(CORPORA)/tang_poems.simp.txt.gz --min-count 100 \
		     --context 128 --batch 16 --steps 6000 --lr 2.5e-3 --warmup 200 --line-starts

# induction: 2 layers, context 64, every window holding a random string of
# 8-32 characters written twice, which only copying predicts; with the
# shakespeare recipe's context of 256 (or 128) and longer strings no head
# learned to copy in 2000-6000 steps.
MODELS_FLAGS_induction := --layers 2 --heads 4 --d-model 128 --norm layernorm --pos learned \
		--mlp gelu --seed 1337 --threads 1 --dtype f16 --val-every 250 \
		--data $(CORPORA)/tinyshakespeare.txt --context 64 --batch 32 --steps 5000 \
		--lr 2e-3 --warmup 200 --repeat 1 --repeat-random --repeat-min 8 --repeat-max 32

# shakespeare-mlm: an encoder trained with BERT's masked-LM objective
# (mlm.h): post-norm, exact GELU, the embedding norm and the masked-LM head
# tied to the embeddings, bidirectional; windows of [CLS] + 126 characters
# from a line's start + [SEP], 15% of the characters scored.
MODELS_FLAGS_shakespeare-mlm := --objective mlm --placement post --mlp gelu-exact \
		--layers 4 --heads 4 --d-model 128 --norm layernorm --pos learned \
		--seed 1337 --threads 1 --dtype f16 --val-every 250 \
		--data $(CORPORA)/tinyshakespeare.txt --context 128 --batch 16 --steps 2500 \
		--lr 2e-3 --warmup 200

models: $(BIN)
	@$(MAKE) --no-print-directory -j2 $(MODELS_SHIPPED:%=models/%.safetensors)

models/tang.safetensors: $(CORPORA)/tang_poems.simp.txt.gz
$(patsubst %,models/%.safetensors,$(filter shakespeare% induction,$(MODELS_SHIPPED))): $(CORPORA)/tinyshakespeare.txt

models/%.safetensors: | $(BIN)
	@mkdir -p $(BUILD)/models models
	@w=$(BUILD)/models/$*.safetensors; \
	if [ -e $$w.optim ]; then \
		echo "models: resuming $*"; ./$(BIN) train --resume $$w; \
	else \
		./$(BIN) train $(MODELS_FLAGS_$*) --name $* --out $$w; \
	fi && mv $$w $@

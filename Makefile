# beamspy — top-level build. `make` builds the Erlang and Elixir code (ebin/),
# the NIF (priv/) and the command-line tool (bin/); `make demo`, `make test`,
# `make bench` do what they say. `make deps` installs missing Debian packages
# when run as root and otherwise prints the command to run.

ERL        ?= erl
ERLC       ?= erlc
CC         ?= gcc
CLANG      ?= clang
TEST_GCC   ?= gcc
ERL_ROOT   := $(shell $(ERL) -noshell -eval 'io:format("~s", [code:root_dir()]), halt().' 2>/dev/null)
ERTS_INC   := $(ERL_ROOT)/usr/include
EI_LIB     := $(ERL_ROOT)/usr/lib

CSTD       := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN       := -Wall -Wextra -Werror
CFLAGS     ?= -O2 -g
ALL_CFLAGS := $(CSTD) $(WARN) $(CFLAGS)

ENGINE_SRC  := $(wildcard c_src/engine/*.c)
# Writers of output formats; readers of input formats (folded, .bspy, dbg trace
# files: the readers need ei and the term decoder of c_src/dist); what both use
# (atomic files, CRC-32, JSON strings, the .bspy constants) in c_src/common.
# The NIF links the writers and never the readers; bin/beamspy links both.
WRITERS_SRC := $(wildcard c_src/writers/*.c)
COMMON_SRC  := $(wildcard c_src/common/*.c)
NIF_SRC     := $(wildcard c_src/nif/*.c)
# CPU sampling (mode => cpu): the kernel's samples of the VM's threads, the
# addresses' names, the join with processes; linked into the NIF.
CPU_SRC     := $(wildcard c_src/cpu/*.c)
CLI_SRC     := $(wildcard c_src/cli/*.c)
READERS_SRC := $(wildcard c_src/readers/*.c)
DIST_SRC    := $(wildcard c_src/dist/*.c)
# Address -> frame resolution of mode => cpu (the JIT's perf map, ELF
# symbols): with elfutils' libelf when it is here (BS_HAVE_LIBELF), else
# dladdr() alone (dynamic symbols only; symbols.h says what changes).
HAVE_LIBELF := $(shell pkg-config --exists libelf 2>/dev/null && echo 1 || { test -f /usr/include/libelf.h && echo 1; })
LIBELF_CFLAGS := $(if $(HAVE_LIBELF),-DBS_HAVE_LIBELF)
# libelf is loaded when first needed (c_src/cpu/libelf_dl.h), never linked: a
# node without libelf.so.1 still loads the NIF.
LIBELF_LIBS := -ldl -lpthread
# Generated files, one policy: whatever a build generates goes into build/ and
# is never committed; every way of building runs make (mix.exs and
# rebar.config run `make nif`, test/otp runs make in its chroot), so nothing
# builds without them. They are:
#   build/gen/assets/x.js.h  the JavaScript/CSS the writers put into their
#       output, kept as their own files in c_src/writers/assets/ and embedded
#       as C string constants (scripts/embed_text.sh); the writers include
#       "assets/x.js.h", found through -I$(GEN)
#   build/cli/payload_data.c  the tool's payload (see below)
GEN         := build/gen
#   build/gen/defaults.h  the defaults and limits the C code uses, from the
#       one table of defaults (see DEFAULTS_H below)
DEFAULTS_H  := $(GEN)/defaults.h
ASSETS      := $(wildcard c_src/writers/assets/*.js c_src/writers/assets/*.css)
ASSET_HDRS  := $(patsubst c_src/writers/assets/%,$(GEN)/assets/%.h,$(ASSETS))

ERL_SRC     := $(wildcard src/*.erl)
ERL_BEAMS   := $(patsubst src/%.erl,ebin/%.beam,$(ERL_SRC))
EX_SRC      := $(wildcard lib/*.ex lib/mix/tasks/*.ex)

NIF_SO      := priv/beamspy_nif.so
CLI_BIN     := bin/beamspy


.PHONY: dialyzer
.PHONY: all deps erlang elixir nif cli assets demo test test-otp stress bench clean fuzz \
    test-c-gcc test-c-asan fuzz-bins recursion-check include-check

all: erlang elixir ebin/beamspy.app nif cli

# --- C objects --------------------------------------------------------------
# The one definition of every C build (the NIF, the tool, the C tests, the
# fuzz targets, the bench and browser drivers): scripts ask make for what
# they run. Each flag set compiles into its own folder,
# build/obj/<set>/<dir>/<file>.o, with <file>.d listing the headers it
# included (-MMD -MP), so a change recompiles only the objects it touches:
#   main  the NIF and bin/beamspy: $(CC) with $(CFLAGS), position independent
#         (one object serves both)
#   gcc   test/c's gcc variant (also the one run under valgrind) and the fuzz
#         seed maker: gcc -O1, -Werror
#   asan  test/c's clang ASan/UBSan variant
#   fuzz  scripts/fuzz.sh's libFuzzer targets (clang, instrumented)
# `make print-VAR` prints a variable (scripts use it for lists, not flags).
INCLUDES   := -Ic_src -I$(GEN) -I$(ERTS_INC) -Ic_src/dist $(LIBELF_CFLAGS)
EI_LIBS    := -L$(EI_LIB) -lei -lpthread
# zlib: the pprof writer gzips its output (beam.smp links libz already).
ZLIB_LIBS  := -lz
# The DWARF unwinder of mode => cpu's C frames (c_src/cpu/dwarf_unwind.h):
# with elfutils' libdw's headers when they are here (BS_HAVE_LIBDW), else it
# says why it cannot unwind. libdw itself is loaded when first needed
# (c_src/cpu/libdw_dl.h), never linked: a node without libdw.so.1 still
# loads the NIF.
DWARF_SRC  := c_src/cpu/dwarf_unwind.c c_src/cpu/cfi_expr.c c_src/cpu/cfi_rule.c c_src/cpu/fp_walk.c \
    c_src/cpu/proc_mem.c c_src/cpu/libdw_dl.c c_src/cpu/loaded_objects.c
HAVE_LIBDW := $(shell pkg-config --exists libdw 2>/dev/null && echo 1 || { test -f /usr/include/elfutils/libdwfl.h && echo 1; })
LIBDW_LIBS := -ldl -lpthread
INCLUDES   += $(if $(HAVE_LIBDW),-DBS_HAVE_LIBDW)
TEST_FLAGS := $(CSTD) -Wall -Wextra -Werror -g -pthread -O1
SANITIZE   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CC_main    := $(CC)
FLAGS_main := $(ALL_CFLAGS) -fPIC -fvisibility=hidden -pthread
CC_gcc     := $(TEST_GCC)
FLAGS_gcc  := $(TEST_FLAGS)
CC_asan    := $(CLANG)
FLAGS_asan := $(TEST_FLAGS) $(SANITIZE)
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: the .bspy reader accepts a zero
# checksum, so mutated inputs get through whole (and others are still
# checked), and both readers use tiny buffers, so small inputs cross buffer
# boundaries.
CC_fuzz    := $(CLANG)
FLAGS_fuzz := $(TEST_FLAGS) $(SANITIZE) -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
SETS       := main gcc asan fuzz

# objs SET, SOURCES: the objects of SOURCES in SET.
objs = $(patsubst c_src/%.c,build/obj/$(1)/%.o,$(2))

define set_rules
build/obj/$(1)/%.o: c_src/%.c | $$(ASSET_HDRS) $$(DEFAULTS_H)
	@mkdir -p $$(@D)
	$$(CC_$(1)) $$(FLAGS_$(1)) $$(if $$(filter fuzz,$(1)),-fsanitize=fuzzer-no-link) $$(INCLUDES) -MMD -MP -c $$< -o $$@
endef
$(foreach s,$(SETS),$(eval $(call set_rules,$(s))))
-include $(wildcard build/obj/*/*/*.d build/obj/*/*.d)
# Objects are kept even when only pattern rules (test and fuzz binaries) need them.
.SECONDARY:

print-%:
	@echo '$($*)'

# `make recursion-check` (run by test/c/run.sh): every C file's direct calls
# (gcc -fcallgraph-info, at -O0 so that no call is folded away) into
# build/callgraph/, then test/c/recursion_check.escript: no function may
# recurse unless test/c/recursion_allowed.txt says what bounds its depth.
ALL_C_SRC  := $(wildcard c_src/*/*.c)
CALLGRAPHS := $(patsubst c_src/%.c,build/callgraph/%.ci,$(ALL_C_SRC))

build/callgraph/%.ci: c_src/%.c | $(ASSET_HDRS) $(DEFAULTS_H)
	@mkdir -p $(@D)
	@$(CC) $(CSTD) -O0 -w $(INCLUDES) -fcallgraph-info -c $< -o $(@:.ci=.o)

recursion-check: $(CALLGRAPHS)
	@escript test/c/recursion_check.escript test/c/recursion_allowed.txt $(CALLGRAPHS)

# `make include-check` (run by test/c/run.sh): the C files include one
# another one way only, no circle between files (a file and its header are
# one unit) or between folders, but for those test/c/include_allowed.txt
# says why are left (test/c/include_check.escript).
include-check:
	@escript test/c/include_check.escript test/c/include_allowed.txt c_src

deps:
	@scripts/deps.sh

erlang: $(ERL_BEAMS) ebin/.docs-stamp

ebin/%.beam: src/%.erl $(wildcard src/*.hrl) | ebin
	$(ERLC) +debug_info -Werror -o ebin $<

# The modules' @doc comments go into their beams (EEP-48 "Docs" chunks), so
# h(beamspy) in erl and h :beamspy in iex work wherever the beams are loaded.
ebin/.docs-stamp: $(ERL_BEAMS) scripts/embed_docs.escript
	@scripts/embed_docs.escript ebin $(ERL_SRC)
	@touch $@

# The .app lists every module in ebin/ (Erlang and Elixir alike).
ebin/beamspy.app: src/beamspy.app.src $(ERL_BEAMS) ebin/.docs-stamp ebin/.elixir-stamp
	@mods=$$(ls ebin/*.beam | sed -e 's|ebin/||' -e 's|\.beam$$||' -e "s|.*|'&'|" | paste -sd, -); \
	    sed -e "s|{modules, \[[^]]*\]}|{modules, [$$mods]}|" $< > $@

elixir: ebin/.elixir-stamp

ebin/.elixir-stamp: $(EX_SRC) $(ERL_BEAMS) ebin/.docs-stamp | ebin
	@if [ -n "$(EX_SRC)" ]; then rm -f ebin/Elixir.*.beam && elixirc --warnings-as-errors -pa ebin -o ebin $(EX_SRC) >/dev/null; fi
	@touch $@

assets: $(ASSET_HDRS)

# build/gen/defaults.h: the defaults and limits the C code uses
# (BS_DEFAULT_<KEY>: the tool's, the NIF's, the engine's), generated from the
# one table of defaults (beamspy_opts:option_table/0), so that none is
# written twice across C and Erlang. Every C object waits for it.
$(DEFAULTS_H): ebin/beamspy_opts.beam scripts/gen_defaults.escript
	@escript scripts/gen_defaults.escript ebin $@

$(GEN)/assets/%.h: c_src/writers/assets/% scripts/embed_text.sh
	@mkdir -p $(dir $@)
	@scripts/embed_text.sh $< $@

nif: $(NIF_SO)

NIF_OBJ := $(call objs,main,$(ENGINE_SRC) $(WRITERS_SRC) $(COMMON_SRC) $(CPU_SRC) $(NIF_SRC))

$(NIF_SO): $(NIF_OBJ) | priv
	$(CC) $(ALL_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $(NIF_OBJ) $(LIBELF_LIBS) $(ZLIB_LIBS)
	@# A missing bs_ function would only show when the VM loads the NIF.
	@if nm -u $@ | grep -q ' bs_'; then nm -u $@ | grep ' bs_'; rm -f $@; exit 1; fi
	@# libelf and libdw are loaded with dlopen: the NIF must not need them to load.
	@if readelf -d $@ | grep -E 'NEEDED.*lib(elf|dw)'; then rm -f $@; exit 1; fi
	@# The NIF never reads a file: no reader may be linked into it.
	@if nm $@ | grep -E ' (bs_read_|bs_dbg_|bs_stack_cache_|bs_tree_build_)'; then rm -f $@; exit 1; fi

cli: $(CLI_BIN)

# The tool carries beamspy's Erlang modules and NIF inside it (for nodes that
# have nothing installed): scripts/embed_payload.sh writes the C file that
# includes them, with what they were built for.
PAYLOAD_C   := build/cli/payload_data.c
ERL_ONLY_BEAMS := $(filter ebin/beamspy%,$(ERL_BEAMS))

$(PAYLOAD_C): $(ERL_ONLY_BEAMS) ebin/.docs-stamp $(NIF_SO) scripts/embed_payload.sh
	@mkdir -p $(dir $@)
	scripts/embed_payload.sh $@ ebin $(NIF_SO)

CLI_OBJ := $(call objs,main,$(ENGINE_SRC) $(WRITERS_SRC) $(COMMON_SRC) $(CLI_SRC) $(READERS_SRC) \
    $(DIST_SRC)) build/obj/main/payload_data.o

build/obj/main/payload_data.o: $(PAYLOAD_C)
	$(CC_main) $(FLAGS_main) $(INCLUDES) -c $< -o $@

$(CLI_BIN): $(CLI_OBJ) | bin
	$(CC) $(ALL_CFLAGS) -pthread -o $@ $(CLI_OBJ) -L$(EI_LIB) -lei -lpthread $(ZLIB_LIBS)
	@# Here the readers' objects are built too: not one of their symbols may be in the NIF.
	@$(call no_symbols_of,$(call objs,main,$(READERS_SRC)),$(NIF_SO)) || { rm -f $@; exit 1; }

# no_symbols_of OBJECTS, BINARY: fails, naming them, if BINARY holds a symbol
# that one of OBJECTS defines.
no_symbols_of = syms=$$(nm -g --defined-only $(1) | awk 'NF == 3 { print $$3 }'); \
    if nm $(2) | awk '{ print $$NF }' | grep -Fx -e "$$syms"; then echo "$(2): symbols of $(1)"; false; fi

# --- test, fuzz and bench binaries (their scripts run them) -----------------
# test/c/run.sh: one binary per test/c/test_*.c and variant, in
# test/c/build/<set>/ (make test-c-gcc, make test-c-asan).
TEST_C_SRC := $(ENGINE_SRC) $(WRITERS_SRC) $(READERS_SRC) $(COMMON_SRC) $(CPU_SRC) c_src/nif/pid_table.c \
    c_src/dist/eterm.c c_src/cli/wait_graph.c c_src/cli/term_frame.c c_src/cli/dump_names.c c_src/cli/function_arg.c
TEST_C_SRC += $(filter-out $(TEST_C_SRC),$(DWARF_SRC))
TEST_C     := $(patsubst test/c/%.c,%,$(wildcard test/c/test_*.c))

define test_c_rules
test/c/build/$(1)/%: test/c/%.c $$(call objs,$(1),$$(TEST_C_SRC)) $$(wildcard test/c/*.h)
	@mkdir -p $$(@D)
	$$(CC_$(1)) $$(FLAGS_$(1)) $$(INCLUDES) -Itest/c -o $$@ $$< $$(call objs,$(1),$$(TEST_C_SRC)) -lcmocka $$(EI_LIBS) \
	    $$(LIBELF_LIBS) $$(LIBDW_LIBS) $$(ZLIB_LIBS)
test-c-$(1): $$(addprefix test/c/build/$(1)/,$$(TEST_C))
endef
$(foreach s,gcc asan,$(eval $(call test_c_rules,$(s))))

# scripts/fuzz.sh: the libFuzzer targets fuzz/fuzz_*.c and the .bspy seed
# maker (a plain build: it must write real checksums), in fuzz/build/.
FUZZ_SRC   := $(ENGINE_SRC) $(WRITERS_SRC) $(READERS_SRC) $(COMMON_SRC) c_src/dist/eterm.c \
    c_src/cpu/perf_map.c
FUZZ_SRC   += $(filter-out $(FUZZ_SRC),$(DWARF_SRC))
FUZZ_BINS  := $(patsubst fuzz/%.c,fuzz/build/%,$(wildcard fuzz/fuzz_*.c)) fuzz/build/make_bspy_seed

fuzz/build/fuzz_%: fuzz/fuzz_%.c $(call objs,fuzz,$(FUZZ_SRC)) $(wildcard fuzz/*.h test/c/*.h)
	@mkdir -p $(@D)
	$(CC_fuzz) $(FLAGS_fuzz) -fsanitize=fuzzer $(INCLUDES) -Itest/c -o $@ $< $(call objs,fuzz,$(FUZZ_SRC)) $(EI_LIBS) $(LIBDW_LIBS) $(ZLIB_LIBS)

fuzz/build/make_bspy_seed: fuzz/make_bspy_seed.c $(call objs,gcc,$(FUZZ_SRC)) $(wildcard fuzz/*.h test/c/*.h)
	@mkdir -p $(@D)
	$(CC_gcc) $(FLAGS_gcc) $(INCLUDES) -Itest/c -o $@ $< $(call objs,gcc,$(FUZZ_SRC)) $(EI_LIBS) $(LIBDW_LIBS) $(ZLIB_LIBS)

fuzz-bins: $(FUZZ_BINS)

# Drivers of the writers without the tool: bench/render/run.sh's, and the
# browser layer's (test/browser/svg.test.js) when the tool has no diff.
DRIVER_OBJ := $(call objs,main,$(ENGINE_SRC) $(WRITERS_SRC) $(READERS_SRC) $(COMMON_SRC) c_src/dist/eterm.c)

bench/build/render/render_driver: bench/render/render_driver.c $(DRIVER_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(INCLUDES) -o $@ $< $(DRIVER_OBJ) $(EI_LIBS) $(ZLIB_LIBS)

build/test/svg_driver: test/browser/svg_driver.c $(DRIVER_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(INCLUDES) -Itest/c -o $@ $< $(DRIVER_OBJ) $(EI_LIBS) $(ZLIB_LIBS)

# bench/run.sh's null tracer, built like the NIF.
bench/build/bench_null_tracer.so: bench/null_tracer/bench_null_tracer.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -fvisibility=hidden -I$(ERTS_INC) -o $@ $<

ebin priv bin:
	mkdir -p $@

# deps first, then a fresh make: the variables above need erl to be installed.
demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

test: deps
	@$(MAKE) --no-print-directory all
	@scripts/run_tests.sh

# The OTP 27 and 29 layers alone (make test runs them after the others).
test-otp: deps
	@$(MAKE) --no-print-directory all
	@for s in trixie sid; do test/otp/run.sh $$s; rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ] || exit 1; done

# The races of test/erlang/beamspy_stress_tests.erl (a few rounds each in
# `make test') for longer: BEAMSPY_STRESS_ROUNDS rounds per race.
BEAMSPY_STRESS_ROUNDS ?= 100
stress: deps
	@$(MAKE) --no-print-directory erlang nif
	@BEAMSPY_STRESS_ROUNDS=$(BEAMSPY_STRESS_ROUNDS) MODULE_TIMEOUT=36000 ONLY=beamspy_stress_tests \
	    test/erlang/run.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh
	@bench/render/run.sh
	@bench/dist/run.sh
	@bench/fidelity/run.sh
	@bench/cpu_fidelity/run.sh
	@bench/cpu_cost/run.sh

# Dialyzer over the Erlang modules alone (make test runs it in the erlang
# layer; see test/erlang/dialyzer.sh).
dialyzer: erlang
	@test/erlang/dialyzer.sh

fuzz: deps
	@scripts/fuzz.sh long

clean:
	rm -rf ebin priv bin build _build test/c/build bench/build fuzz/build

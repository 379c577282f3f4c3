# cumtrace: one non-recursive GNU Make file.
#
#   make                     build/libcumtrace.so and build/cumtrace-report
#   make check               unit tests (Check) and end-to-end tests on the fake CUDA runtime
#   make check SANITIZE=address,undefined   the same, built with sanitizers in build-address,undefined/
#   make check SANITIZE=thread              the same under ThreadSanitizer, in build-thread/
#   make bench               capture-cost benchmark
#   make install PREFIX=/usr/local   (PYTHON_SITE=DIR: where python3 finds the cumtrace package;
#                            DESTDIR=DIR: a staging root); make uninstall with the same variables
#   V=1                      show the commands

CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
CC ?= cc
SANITIZE ?=

ifeq ($(SANITIZE),)
BUILD ?= build
SAN_FLAGS :=
else
BUILD ?= build-$(SANITIZE)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

VERSION := 0.1.0
# Where the documentation is published (docs/ of this tree): SARIF's informationUri and
# its rules' helpUri point there. A placeholder until the project has a public home.
DOCS_URL ?= https://example.invalid/cumtrace/docs
CUDA_INC := $(CUDA_HOME)/include

ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC $(WARN) -Iinclude -I$(CUDA_INC) \
	-DCUMTRACE_VERSION='"$(VERSION)"' -DCUMTRACE_DOCS_URL='"$(DOCS_URL)"' -MMD -MP $(SAN_FLAGS)
CFLAGS ?=
ALL_CFLAGS := $(BASE_CFLAGS) $(CFLAGS)
LDFLAGS ?=
ALL_LDFLAGS := $(SAN_FLAGS) $(LDFLAGS)

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

# ---- the shim: preload/core (recording), preload/hooks (the ways in), preload/output (the session,
# the writer, the dump file); docs/style.md says which file goes where
PRELOAD_SRC := $(wildcard preload/*/*.c)
PRELOAD_OBJ := $(PRELOAD_SRC:%.c=$(BUILD)/obj/%.o)
PRELOAD_LIBS := -lunwind -ldl -lpthread
SHIM := $(BUILD)/libcumtrace.so

$(SHIM): $(PRELOAD_OBJ) preload/exports.map
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,--version-script=preload/exports.map -Wl,-soname,libcumtrace.so \
		-o $@ $(PRELOAD_OBJ) $(ALL_LDFLAGS) $(PRELOAD_LIBS)

# dlsym's slow path runs inside the sanitizer runtime's own start-up (it looks
# up the functions it intercepts through dlsym), before sanitizer shadow
# memory exists, and so does sigaction (the runtime installs its handlers
# through it): those files are never instrumented.
$(BUILD)/obj/preload/hooks/entry.o $(BUILD)/obj/preload/core/signal.o: ALL_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(ALL_CFLAGS))

# ---- the analyzer ----------------------------------------------------------
# One folder per stage (docs/style.md): read/, model/, analyses/, render/,
# exports/, commands/ (main.c among them), base/. Sources include each other's
# headers by folder ("model/model.h") from -Ianalyzer.
ANALYZER_SRC := $(filter-out analyzer/commands/main.c,$(wildcard analyzer/*/*.c))
ANALYZER_OBJ := $(ANALYZER_SRC:%.c=$(BUILD)/obj/%.o)
ANALYZER_LIB := $(BUILD)/libctanalyzer.a
ANALYZER_LIBS := -ldw -lelf -lzstd -lm -lpthread
REPORT := $(BUILD)/cumtrace-report

$(ANALYZER_LIB): $(ANALYZER_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/analyzer/%.o: ALL_CFLAGS += -Ianalyzer

$(REPORT): $(BUILD)/obj/analyzer/commands/main.o $(ANALYZER_LIB)
	@echo "  LD      $@"
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(ANALYZER_LIBS)

# ---- objects ---------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# ---- fake CUDA libraries (tests only) --------------------------------------
# -Bsymbolic-functions: like the real driver, the fake hands out pointers to
# its own functions from cuGetProcAddress, never to an interposer's export.
FAKE_DIR := $(BUILD)/tests/fake
FAKE_CUDART := $(FAKE_DIR)/libcudart.so.13
FAKE_CUDA := $(FAKE_DIR)/libcuda.so.1

$(FAKE_CUDA): $(BUILD)/obj/tests/fake/cuda.o tests/fake/cuda.map
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-Bsymbolic-functions -Wl,--version-script=tests/fake/cuda.map -Wl,-soname,libcuda.so.1 \
		-o $@ $(BUILD)/obj/tests/fake/cuda.o $(ALL_LDFLAGS) -lpthread
	$(Q)ln -sf libcuda.so.1 $(FAKE_DIR)/libcuda.so

# Fake CUPTI: the callback API, driven by the test programs (tests/e2e/t_cupti.sh).
FAKE_CUPTI := $(FAKE_DIR)/libcupti.so.13
# CUPTI headers: $(CUDA_HOME)/include in some layouts, extras/CUPTI/include in the toolkit's.
CUPTI_INC := $(CUDA_HOME)/extras/CUPTI/include
$(BUILD)/obj/preload/hooks/cupti.o $(BUILD)/obj/tests/fake/cupti.o: ALL_CFLAGS += -I$(CUPTI_INC)
$(BUILD)/tests/progs/cupti_%: PROG_CFLAGS += -I$(CUPTI_INC)

$(FAKE_CUPTI): $(BUILD)/obj/tests/fake/cupti.o tests/fake/cupti.map
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,--version-script=tests/fake/cupti.map -Wl,-soname,libcupti.so.13 \
		-o $@ $(BUILD)/obj/tests/fake/cupti.o $(ALL_LDFLAGS)

$(FAKE_CUDART): $(BUILD)/obj/tests/fake/cudart.o tests/fake/cudart.map
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,--version-script=tests/fake/cudart.map -Wl,-soname,libcudart.so.13 \
		-o $@ $(BUILD)/obj/tests/fake/cudart.o $(ALL_LDFLAGS) -ldl -lpthread
	$(Q)ln -sf libcudart.so.13 $(FAKE_DIR)/libcudart.so

# Null runtime for the benchmark's scaling rows (tests/fake/nullrt.c): its own
# folder, so that LD_LIBRARY_PATH picks it instead of the fake runtime.
NULLRT := $(BUILD)/tests/nullrt/libcudart.so.13

$(NULLRT): $(BUILD)/obj/tests/fake/nullrt.o tests/fake/nullrt.map
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,--version-script=tests/fake/nullrt.map -Wl,-soname,libcudart.so.13 \
		-o $@ $(BUILD)/obj/tests/fake/nullrt.o $(ALL_LDFLAGS)

# ---- test programs: each tests/e2e/progs/NAME.c becomes build/tests/progs/NAME
PROG_SRC := $(wildcard tests/e2e/progs/*.c)
PROGS := $(PROG_SRC:tests/e2e/progs/%.c=$(BUILD)/tests/progs/%)
PROG_CFLAGS := -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Wno-unused-parameter \
	-Iinclude -I$(CUDA_INC) $(SAN_FLAGS)

$(BUILD)/tests/progs/%: tests/e2e/progs/%.c $(FAKE_CUDART) $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(FAKE_DIR) -l:libcudart.so.13 -ldl -lpthread $(ALL_LDFLAGS)
# The overhead benchmark's program is built as real programs are: optimized, no frame pointers.
$(BUILD)/tests/progs/async_loop: PROG_CFLAGS += -O2 -fomit-frame-pointer

# C++ test programs (tests/e2e/progs/NAME.cc): optimized, so that the compiler
# inlines and the symbol tests see inline frames and mangled names.
PROG_CXX_SRC := $(wildcard tests/e2e/progs/*.cc)
PROGS += $(PROG_CXX_SRC:tests/e2e/progs/%.cc=$(BUILD)/tests/progs/%)
PROG_CXXFLAGS := -O2 -g -Wall -Wextra -Iinclude -I$(CUDA_INC) $(SAN_FLAGS)

$(BUILD)/tests/progs/%: tests/e2e/progs/%.cc $(FAKE_CUDART) $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CXX     $@"
	$(Q)$(CXX) $(PROG_CXXFLAGS) -o $@ $< -L$(FAKE_DIR) -l:libcudart.so.13 $(ALL_LDFLAGS)

# The statically linked runtime's stand-in (tests/e2e/t_paths_static.sh) must
# not link libcudart: -fsanitize links it even when unused (no --as-needed).
$(BUILD)/tests/progs/paths_static: tests/e2e/progs/paths_static.c $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -ldl -lpthread $(ALL_LDFLAGS)

# Every way in next to its untraced twin (tests/e2e/t_paths_twin.sh): the
# program links no CUDA library; the library it loads RTLD_LOCAL links both.
TWIN_LIB := $(BUILD)/tests/libs/libcttwin.so

$(TWIN_LIB): tests/e2e/libs/twin.c tests/e2e/progs/twin_calls.h $(FAKE_CUDART) $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O0 -g -fPIC -shared -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter \
		-I$(CUDA_INC) $(SAN_FLAGS) -Wl,-soname,libcttwin.so -o $@ $< -L$(FAKE_DIR) \
		-l:libcudart.so.13 -l:libcuda.so.1 $(ALL_LDFLAGS)

# A second copy of the runtime, libcudart.so.12 (its own soname and version
# node), and the same library linked against it: two RTLD_LOCAL libraries
# whose calls must each reach their own copy.
FAKE12_DIR := $(BUILD)/tests/fake12
FAKE_CUDART12 := $(FAKE12_DIR)/libcudart.so.12
TWIN_LIB12 := $(BUILD)/tests/libs/libcttwin12.so

$(FAKE_CUDART12): $(BUILD)/obj/tests/fake/cudart.o tests/fake/cudart.map
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)sed 's/libcudart\.so\.13/libcudart.so.12/' tests/fake/cudart.map >$(FAKE12_DIR)/cudart.map
	$(Q)$(CC) -shared -Xlinker --version-script=$(FAKE12_DIR)/cudart.map -Wl,-soname,libcudart.so.12 \
		-o $@ $(BUILD)/obj/tests/fake/cudart.o $(ALL_LDFLAGS) -ldl -lpthread

$(TWIN_LIB12): tests/e2e/libs/twin.c tests/e2e/progs/twin_calls.h $(FAKE_CUDART12) $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O0 -g -fPIC -shared -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter \
		-I$(CUDA_INC) $(SAN_FLAGS) -Wl,-soname,libcttwin12.so -o $@ $< -L$(FAKE12_DIR) -L$(FAKE_DIR) \
		-l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../fake12' $(ALL_LDFLAGS)

$(BUILD)/tests/progs/paths_twin: tests/e2e/progs/paths_twin.c tests/e2e/progs/twin_calls.h $(TWIN_LIB) $(TWIN_LIB12)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -ldl $(ALL_LDFLAGS)

# ---- stand-ins for allocator libraries (tests only): named like PyTorch's,
# cuBLAS's and NCCL's, so that leak classes are tested end to end
# (tests/e2e/libs/). leak_classes and growth link them, found through rpath.
TLIB_DIR := $(BUILD)/tests/libs
TLIBS := $(TLIB_DIR)/libtorch_cuda.so $(TLIB_DIR)/libcublas.so.13 $(TLIB_DIR)/libnccl.so.2
TLIB_FLAGS := -O0 -g -fPIC -shared -fno-omit-frame-pointer -I$(CUDA_INC) $(SAN_FLAGS)

$(TLIB_DIR)/libtorch_cuda.so: tests/e2e/libs/torch_cuda.cc $(FAKE_CUDART)
	@mkdir -p $(@D)
	@echo "  CXX     $@"
	$(Q)$(CXX) $(TLIB_FLAGS) -Wl,-soname,libtorch_cuda.so -o $@ $< -L$(FAKE_DIR) -l:libcudart.so.13 $(ALL_LDFLAGS)

$(TLIB_DIR)/libcublas.so.13: tests/e2e/libs/cublas.c $(FAKE_CUDART)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(TLIB_FLAGS) -Wl,-soname,libcublas.so.13 -o $@ $< -L$(FAKE_DIR) -l:libcudart.so.13 $(ALL_LDFLAGS)

$(TLIB_DIR)/libnccl.so.2: tests/e2e/libs/nccl.c $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(TLIB_FLAGS) -Wl,-soname,libnccl.so.2 -o $@ $< -L$(FAKE_DIR) -l:libcuda.so.1 $(ALL_LDFLAGS)

$(BUILD)/tests/progs/leak_classes $(BUILD)/tests/progs/growth: $(BUILD)/tests/progs/%: \
		tests/e2e/progs/%.c $(FAKE_CUDART) $(FAKE_CUDA) $(TLIBS)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(FAKE_DIR) -L$(TLIB_DIR) -l:libcudart.so.13 -ltorch_cuda \
		-l:libcublas.so.13 -l:libnccl.so.2 -Wl,-rpath,'$$ORIGIN/../libs' -Xlinker -rpath-link -Xlinker $(FAKE_DIR) -ldl -lpthread $(ALL_LDFLAGS)

# A library whose thread-local data its constructor touches, which
# tests/e2e/t_hostile_sig_dlopen.sh dlopens and dlcloses again and again.
CTTLS := $(TLIB_DIR)/libcttls.so

$(CTTLS): tests/e2e/libs/cttls.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(TLIB_FLAGS) -Wl,-soname,libcttls.so -o $@ $< $(ALL_LDFLAGS)

# A thread with a Python thread state and no frame, for tests/e2e/t_python.sh;
# loaded by python3, which no sanitizer runtime instruments: built without one.
PYNOFRAME := $(TLIB_DIR)/libpynoframe.so

$(PYNOFRAME): tests/e2e/libs/pynoframe.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -g -fPIC -shared -Wl,-soname,libpynoframe.so -o $@ $< -ldl -lpthread

# A write(2) interposer that closes the dump's descriptor before one of the shim's writes,
# for tests/e2e/t_hostile_dumpfd.sh; preloaded after the shim, built without a sanitizer.
CLOSEWRITE := $(TLIB_DIR)/libclosewrite.so

$(CLOSEWRITE): tests/e2e/libs/closewrite.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -g -fPIC -shared -Wl,-soname,libclosewrite.so -o $@ $< -ldl

# hostile_signal exports its gethostname, which the shim calls during start-up.
$(BUILD)/tests/progs/hostile_signal: PROG_CFLAGS += -rdynamic

# ---- a stand-in for PyTorch's libc10_cuda.so (tests only; tests/fake/c10_cuda.cc):
# C++, checked against the version table it includes when it loads. Its own
# folder: nothing finds it through LD_LIBRARY_PATH (the tests copy it into a
# torch/lib/ beside a torch/version.py, as in a wheel).
FAKE_C10 := $(BUILD)/tests/torch/libc10_cuda.so

$(FAKE_C10): tests/fake/c10_cuda.cc preload/hooks/torchoffsets.h $(FAKE_CUDART) $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CXX     $@"
	$(Q)$(CXX) -std=c++17 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Ipreload/hooks -I$(CUDA_INC) $(SAN_FLAGS) \
		-Wl,-soname,libc10_cuda.so -o $@ $< -L$(FAKE_DIR) -l:libcudart.so.13 $(ALL_LDFLAGS)

# ---- the synthetic dump generator (scripts/gendump.c, the analyzer benchmark)
# It packs records with the shim's own compressor, preload/output/compress.c,
# and its events with the writer's packing, preload/output/packrun.c.
GENDUMP := $(BUILD)/gendump

# Linked from objects, each with its own dependency file: a source that moves
# leaves only the stale file of an object nothing asks for.
$(GENDUMP): $(BUILD)/obj/scripts/gendump.o $(BUILD)/obj/preload/output/compress.o \
	    $(BUILD)/obj/preload/output/packrun.o
	@echo "  LD      $@"
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) -ldl

# ---- unit tests: each tests/unit/test_NAME.c becomes build/tests/unit/test_NAME
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNITS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
PRELOAD_ARCHIVE := $(BUILD)/libctpreload.a

$(PRELOAD_ARCHIVE): $(PRELOAD_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/unit/%: tests/unit/%.c $(ANALYZER_LIB) $(PRELOAD_ARCHIVE)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(ALL_CFLAGS) -Ianalyzer $(CHECK_CFLAGS) -o $@ $< $(ANALYZER_LIB) $(PRELOAD_ARCHIVE) \
		$(ALL_LDFLAGS) $(CHECK_LIBS) $(ANALYZER_LIBS) $(PRELOAD_LIBS)

# ---- fuzzing (clang + libFuzzer, ASan, UBSan) --------------------------------
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_JOBS=1]   build $(BUILD)/fuzz/fuzz_dump and run it
# The analyzer sources are compiled again with clang and the fuzzer's
# instrumentation into $(BUILD)/fuzz/obj (never the gcc objects).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -O1 -g -Wall -Wno-unused-parameter -Iinclude -Ianalyzer \
	-DCUMTRACE_VERSION='"$(VERSION)"' -DCUMTRACE_DOCS_URL='"$(DOCS_URL)"' -MMD -MP $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_OBJ := $(ANALYZER_SRC:%.c=$(FUZZ_DIR)/obj/%.o) $(FUZZ_DIR)/obj/tests/fuzz/fuzz_dump.o
FUZZ_BIN := $(FUZZ_DIR)/fuzz_dump

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_BIN): $(FUZZ_OBJ)
	@echo "  LD      $@"
	$(Q)$(FUZZ_CC) -o $@ $^ $(FUZZ_SAN) -fsanitize=fuzzer $(ANALYZER_LIBS)

fuzz-build: $(FUZZ_BIN)

fuzz: $(FUZZ_BIN)
	$(Q)FUZZ=$(FUZZ_BIN) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) sh tests/fuzz/run.sh

.PHONY: fuzz fuzz-build

# ---- the Python package (python/cumtrace): copied beside the shim, where its
# bootstrap (preload/core/pyboot.c) looks for it: $(BUILD)/python, and once
# installed PREFIX/lib/cumtrace/python (and the system python3's site folder).
PY_SRC := $(wildcard python/cumtrace/*.py)
PY_PKG := $(PY_SRC:python/%=$(BUILD)/python/%)
$(BUILD)/python/cumtrace/%.py: python/cumtrace/%.py
	@mkdir -p $(@D)
	$(Q)cp $< $@
PYTHON3 ?= python3
# The pytest plugin's entry point (python/entry_points.txt, group pytest11) in the
# metadata folder a pip install writes: pytest loads cumtrace.pytest_plugin by itself.
PY_DIST := cumtrace-$(VERSION).dist-info
PYTHON_SITE ?= $(shell $(PYTHON3) -c 'import sysconfig; print(sysconfig.get_path("purelib", vars={"base": "$(PREFIX)"}))' 2>/dev/null)

# ---- the man pages cumtrace(1) and cumtrace-report(1), from their one source
# docs/man/pages.in and what the programs' --help says (scripts/mkman.py runs
# them); tests/e2e/t_man.sh checks the pages against --help both ways.
MAN_SRC := docs/man/pages.in
MANS := $(BUILD)/man/cumtrace.1 $(BUILD)/man/cumtrace-report.1
MAN_HELPS := --help-of cumtrace=$(BUILD)/cumtrace --help-of cumtrace-report=$(REPORT) \
	--help-of 'symbolize=$(REPORT) symbolize'

$(BUILD)/man/%.1: $(MAN_SRC) scripts/mkman.py README.md $(BUILD)/cumtrace $(REPORT)
	@mkdir -p $(@D)
	@echo "  MAN     $@"
	$(Q)$(PYTHON3) scripts/mkman.py --page $* --version $(VERSION) $(MAN_HELPS) $(MAN_SRC) >$@.tmp && mv $@.tmp $@

# ---- targets ---------------------------------------------------------------
all: $(SHIM) $(REPORT) $(BUILD)/cumtrace $(PY_PKG) $(MANS)

# The wrapper, pointed at this build folder (make install writes its own copy).
$(BUILD)/cumtrace: bin/cumtrace Makefile
	@mkdir -p $(@D)
	$(Q)sed 's|@LIBDIR@|$(abspath $(BUILD))|; s|@BINDIR@|$(abspath $(BUILD))|; s|@VERSION@|$(VERSION)|' $< > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@

# ---- NCCL (issue 19 §5): a fake libnccl.so.2 over the fake driver (a folder of its own: the
# stand-in of tests/e2e/libs/nccl.c has the same soname), and the program that uses it ----
FAKE_NCCL_DIR := $(BUILD)/tests/nccl
FAKE_NCCL := $(FAKE_NCCL_DIR)/libnccl.so.2
$(FAKE_NCCL): $(BUILD)/obj/tests/fake/nccl.o tests/fake/nccl.map $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,--version-script=tests/fake/nccl.map -Wl,-soname,libnccl.so.2 \
		-o $@ $(BUILD)/obj/tests/fake/nccl.o -L$(FAKE_DIR) -l:libcuda.so.1 $(ALL_LDFLAGS)
$(BUILD)/tests/progs/nccl_comms: tests/e2e/progs/nccl_comms.c tests/fake/nccl.h $(FAKE_CUDART) $(FAKE_CUDA) $(FAKE_NCCL)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(PROG_CFLAGS) -Itests/fake -o $@ $< -L$(FAKE_DIR) -L$(FAKE_NCCL_DIR) -l:libcudart.so.13 -l:libnccl.so.2 \
		-Wl,-rpath,'$$ORIGIN/../nccl' -Xlinker -rpath-link -Xlinker $(FAKE_DIR) -ldl -lpthread $(ALL_LDFLAGS)
tests: $(FAKE_NCCL)

tests: all $(FAKE_CUDART) $(FAKE_CUDA) $(FAKE_CUPTI) $(NULLRT) $(TLIBS) $(CTTLS) $(PYNOFRAME) $(CLOSEWRITE) $(TWIN_LIB) $(TWIN_LIB12) $(FAKE_C10) $(PROGS) $(UNITS) $(GENDUMP)

check: tests
	$(Q)BUILD=$(BUILD) SANITIZE=$(SANITIZE) sh tests/run.sh

bench: all $(FAKE_CUDART) $(FAKE_CUDA) $(NULLRT) $(PROGS) $(GENDUMP) $(FAKE_C10) $(PYNOFRAME)
	$(Q)BUILD=$(BUILD) sh scripts/bench.sh

demo: all $(FAKE_CUDART) $(FAKE_CUDA) $(PROGS)
	$(Q)BUILD=$(BUILD) sh scripts/demo.sh

# Folders of PREFIX that install may create; uninstall removes them (and their
# parents below PREFIX) when it leaves them empty.
INSTALL_DIRS := bin include/cumtrace lib/cumtrace/python/cumtrace lib/pkgconfig share/man/man1
HEADERS := $(wildcard include/cumtrace/*.h)

install: all
	install -d $(INSTALL_DIRS:%=$(DESTDIR)$(PREFIX)/%)
	install -m 755 $(SHIM) $(DESTDIR)$(PREFIX)/lib/libcumtrace.so
	install -m 755 $(REPORT) $(DESTDIR)$(PREFIX)/bin/cumtrace-report
	sed 's|@LIBDIR@|$(PREFIX)/lib|; s|@BINDIR@|$(PREFIX)/bin|; s|@VERSION@|$(VERSION)|' bin/cumtrace > $(DESTDIR)$(PREFIX)/bin/cumtrace
	chmod 755 $(DESTDIR)$(PREFIX)/bin/cumtrace
	install -m 755 bin/ctdump.py $(DESTDIR)$(PREFIX)/bin/ctdump.py
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/cumtrace/
	install -m 644 $(PY_SRC) $(DESTDIR)$(PREFIX)/lib/cumtrace/python/cumtrace/
	install -m 644 $(MANS) $(DESTDIR)$(PREFIX)/share/man/man1/
	sed 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' include/cumtrace.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cumtrace.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/cumtrace.pc
	sed -i 's|@LIBDIR@|$(PREFIX)/lib|; s|@BINDIR@|$(PREFIX)/bin|' $(DESTDIR)$(PREFIX)/lib/cumtrace/python/cumtrace/pytest_plugin.py
	if [ -n "$(PYTHON_SITE)" ]; then install -d $(DESTDIR)$(PYTHON_SITE)/cumtrace $(DESTDIR)$(PYTHON_SITE)/$(PY_DIST) && \
		install -m 644 $(PY_SRC) $(DESTDIR)$(PYTHON_SITE)/cumtrace/ && \
		sed -i 's|@LIBDIR@|$(PREFIX)/lib|; s|@BINDIR@|$(PREFIX)/bin|' $(DESTDIR)$(PYTHON_SITE)/cumtrace/pytest_plugin.py && \
		printf 'Metadata-Version: 2.1\nName: cumtrace\nVersion: $(VERSION)\n' >$(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)/METADATA && \
		install -m 644 python/entry_points.txt $(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)/; fi

# What install wrote, and nothing else; its folders when left empty, up to
# PREFIX (never PREFIX itself, nor anything above it).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libcumtrace.so $(DESTDIR)$(PREFIX)/bin/cumtrace-report \
		$(DESTDIR)$(PREFIX)/bin/cumtrace $(DESTDIR)$(PREFIX)/bin/ctdump.py \
		$(HEADERS:include/%=$(DESTDIR)$(PREFIX)/include/%) \
		$(MANS:$(BUILD)/man/%=$(DESTDIR)$(PREFIX)/share/man/man1/%) $(DESTDIR)$(PREFIX)/lib/pkgconfig/cumtrace.pc
	rm -f $(PY_SRC:python/cumtrace/%=$(DESTDIR)$(PREFIX)/lib/cumtrace/python/cumtrace/%)
	if [ -n "$(PYTHON_SITE)" ]; then rm -f $(PY_SRC:python/cumtrace/%=$(DESTDIR)$(PYTHON_SITE)/cumtrace/%) \
		$(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)/METADATA $(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)/entry_points.txt; fi
	for d in $(INSTALL_DIRS:%=$(DESTDIR)$(PREFIX)/%) $(if $(PYTHON_SITE),$(DESTDIR)$(PYTHON_SITE)/cumtrace $(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)); do \
		while case $$d in "$(DESTDIR)$(PREFIX)"/?*) rmdir "$$d" 2>/dev/null ;; *) false ;; esac; do d=$${d%/*}; done; \
	done

clean:
	rm -rf build build-*

.PHONY: all tests check bench demo install uninstall clean
.DEFAULT_GOAL := all
.SECONDARY:

# $(BUILD)/gendump.d is left by trees built when gendump was compiled in one
# step from its sources: it names them where they were (preload/compress.c).
-include $(filter-out $(GENDUMP).d,$(shell find $(BUILD) -name '*.d' 2>/dev/null))

# Artel: entry points for people and CI. The real build is CMake + Ninja;
# this file only names the common runs. Every target installs missing Debian
# packages first (scripts/install-deps.sh; a no-op when all are present).
#
#   make demo    build, then run the demo (scripts/demo.sh)
#   make test    the Kubernetes test control plane (tools/k8s/build.sh into build-k8s/bin;
#                Go's caches make later runs fast), the sanitizer build (ASan+UBSan) in
#                build-asan/, then every CTest test (the `kube` ones on that control plane);
#                then the clang fuzz tree in build-fuzz/: each libFuzzer target of
#                fuzz/ for FUZZ_SECONDS over its committed corpus (docs/testing.md)
#   make build   optimized build in build/; binaries in build/bin/
#   make bench   optimized build, then every build/bin/bench_* program
#   make bench-e2e  submit-to-done against Slurm on this host (bench/e2e_vs_slurm.sh)
#   make format  clang-format -i over src tests bench
#   make tidy    clang-tidy over src (uses build/compile_commands.json)
#   make k8s     only the Kubernetes test control plane and Kueue's minimalkueue (build-k8s/bin;
#                docs/kubernetes.md)
#   make kueue-diff  every scenario on real Kueue and on arteld, against `artel test` (docs/semantics.md)
#   make clean   remove build trees

SHELL := /bin/bash
.DEFAULT_GOAL := build

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
TSAN_DIR ?= build-tsan
FUZZ_SECONDS ?= 20
CMAKE ?= cmake
CTEST ?= ctest

# The sanitizer build uses RelWithDebInfo at -O1 without NDEBUG: ASan at -O0
# is several times slower, and tests should keep assert() live. -g1 (line
# tables only) keeps file:line in sanitizer stack traces at a fraction of
# full debug information's compile and link time (CI's time limit). The
# benchmark programs are built there for their smoke run (label bench,
# bench/bench_smoke.h: small shapes, one iteration).
ASAN_CMAKE_FLAGS := -DARTEL_SANITIZE=ON -DARTEL_BUILD_BENCH=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"

# Stop at the first report, with a stack trace. Exported so that test
# discovery at build time (gtest_discover_tests) runs under the same options.
export ASAN_OPTIONS := halt_on_error=1:print_stacktrace=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1
export UBSAN_OPTIONS := halt_on_error=1:print_stacktrace=1
# Leaks inside OpenSSL 3.0's own lazy initialisation; see the file.
export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0

# The fuzz tree: clang++ (libFuzzer exists only there), the libraries the
# targets need and fuzz/; see fuzz/CMakeLists.txt for the per-input limits.
FUZZ_CMAKE_FLAGS := -DARTEL_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DARTEL_FUZZ_SECONDS=$(FUZZ_SECONDS) \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only"

SOURCE_DIRS := src tests bench fuzz

.PHONY: all deps k8s build check test tsan bench demo format format-check tidy clean

all: build

deps:
	@scripts/install-deps.sh

# kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl and
# the harness's Go tools (fake-kubelet, kueue-load), from tools/k8s/go.mod;
# then real Kueue's minimalkueue (with its runner and checker) from
# tools/k8s/kueue/go.mod, which the kube test kueue_diff_subset_kueue runs.
k8s:
	@scripts/install-deps.sh --k8s
	tools/k8s/build.sh $(CURDIR)/build-k8s/bin
	tools/k8s/build-kueue.sh $(CURDIR)/build-k8s/bin --minimal

build: deps
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

# The fast loop: the Release build and the tests that need no control plane,
# browser or daemon process (labels unit, property, scenario; docs/development.md).
check: build
	$(CTEST) --test-dir $(BUILD_DIR) -L '^(unit|property|scenario)$$' --output-on-failure -j $(JOBS)

# clang-tidy's starter set, as errors, over the layers with no generated
# code (the rest of .clang-tidy stays advisory: make tidy). Uses the ASan
# tree's compile database, so it runs after that build.
TIDY_CI_CHECKS := -*,bugprone-*,-bugprone-easily-swappable-parameters,-bugprone-narrowing-conversions,$\
  -bugprone-branch-clone,-bugprone-macro-parentheses,-bugprone-implicit-widening-of-multiplication-result,$\
  -bugprone-signed-char-misuse,performance-*,-performance-inefficient-string-concatenation
TIDY_CI_FILES := ^$(CURDIR)/src/(core|store|loop)/

# A test that finds a tool missing (promtool, chromium, node, ...) fails here
# instead of skipping (tests/missing_tool.sh).
test: export ARTEL_REQUIRE_TOOLS := 1
test: deps k8s
	@echo "==> format-check (clang-format; make format fixes it)"
	@$(MAKE) --no-print-directory format-check
	$(CMAKE) -S . -B $(ASAN_DIR) -G Ninja $(ASAN_CMAKE_FLAGS)
	$(CMAKE) --build $(ASAN_DIR) -j $(JOBS)
	run-clang-tidy -quiet -p $(ASAN_DIR) -j $(JOBS) \
	  -config="{Checks: '$(TIDY_CI_CHECKS)', WarningsAsErrors: '*', HeaderFilterRegex: 'src/.*'}" \
	  -extra-arg=-Wno-unknown-warning-option '$(TIDY_CI_FILES)'
	$(CTEST) --test-dir $(ASAN_DIR) --output-on-failure --no-tests=error -j $(JOBS)
	$(CMAKE) -S . -B $(FUZZ_DIR) -G Ninja $(FUZZ_CMAKE_FLAGS)
	$(CMAKE) --build $(FUZZ_DIR) -j $(JOBS)
	$(CTEST) --test-dir $(FUZZ_DIR) --output-on-failure --no-tests=error -j $(JOBS)

# ThreadSanitizer over the in-process tests of the threaded parts: the
# store's group commit (concurrent appenders), the control loop's thread and
# the server library's units. Not part of `make test` (another build of the
# core and server libraries would not fit CI's time; docs/testing.md says
# what runs where).
TSAN_TESTS := store_test loop_test server_unit_test server_history_test
tsan: deps
	$(CMAKE) -S . -B $(TSAN_DIR) -G Ninja -DARTEL_TSAN=ON -DARTEL_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
	$(CMAKE) --build $(TSAN_DIR) -j $(JOBS) --target $(TSAN_TESTS)
	@set -e; for t in $(TSAN_TESTS); do echo "==> $$t (TSan)"; \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_DIR)/bin/$$t --gtest_brief=1; done

bench: build
	@set -e; shopt -s nullglob; benches=($(BUILD_DIR)/bin/bench_*); \
	if (( $${#benches[@]} == 0 )); then echo "bench: no $(BUILD_DIR)/bin/bench_* programs yet"; exit 0; fi; \
	for b in "$${benches[@]}"; do \
	  [[ -x $$b && -f $$b ]] || continue; \
	  echo "==> $$b"; "$$b" --benchmark_counters_tabular=true; echo; \
	done

# Kueue's scalability harness (its runner and `baseline` config) on real
# Kueue's minimalkueue and on arteld, one after the other on fresh control
# planes, side by side (bench/kueue_side_by_side.sh; docs/performance.md).
# BENCH_KUEUE_FLAGS passes options (e.g. --config NAME, --sides artel).
.PHONY: bench-kueue
bench-kueue:
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS) --target arteld
	@if [[ -z "$${ARTEL_K8S_BIN:-}" ]]; then tools/k8s/build.sh $(CURDIR)/build-k8s/bin; fi
	tools/k8s/build-kueue.sh $(CURDIR)/build-k8s/bin
	ARTELD=$(CURDIR)/$(BUILD_DIR)/bin/arteld ARTEL_KUEUE_BIN=$(CURDIR)/build-k8s/bin \
	  bench/kueue_side_by_side.sh $(BENCH_KUEUE_FLAGS)

# The differential run of every scenario (examples/, tests/scenarios/) on real
# Kueue's minimalkueue and on arteld, against `artel test`'s own result
# (tests/kube/kueue_diff.sh; docs/semantics.md, "Differential run against
# real Kueue"). KUEUE_DIFF_FLAGS passes options (e.g. --sides artel, --jobs 2).
.PHONY: kueue-diff
kueue-diff: k8s
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS) --target arteld kueue_diff
	ARTELD=$(CURDIR)/$(BUILD_DIR)/bin/arteld KUEUE_DIFF=$(CURDIR)/$(BUILD_DIR)/bin/kueue_diff \
	  tests/kube/kueue_diff.sh --known tests/kube/kueue_diff_known.txt $(KUEUE_DIFF_FLAGS) examples tests/scenarios

# Submit to done, side by side with Slurm (bench/e2e_vs_slurm.sh; docs/performance.md):
# installs the bench-only Slurm and munge packages, builds artel and arteld
# (Release), starts munged, slurmctld and 8 slurmd, then arteld, and prints
# jobs/s for both. Needs root (slurmd). BENCH_E2E_FLAGS passes options
# (e.g. --jobs 200, --parallel 1, --sides artel).
.PHONY: bench-e2e
bench-e2e: deps
	@scripts/install-deps.sh --bench-slurm
	$(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS) --target artel arteld
	ARTEL=$(CURDIR)/$(BUILD_DIR)/bin/artel ARTELD=$(CURDIR)/$(BUILD_DIR)/bin/arteld \
	  bench/e2e_vs_slurm.sh $(BENCH_E2E_FLAGS)

demo: build
	@scripts/demo.sh

format:
	@find $(SOURCE_DIRS) \( -name '*.h' -o -name '*.cc' \) -print0 2>/dev/null | xargs -0 -r clang-format -i --style=file

format-check:
	@find $(SOURCE_DIRS) \( -name '*.h' -o -name '*.cc' \) -print0 2>/dev/null | xargs -0 -r clang-format --dry-run --Werror --style=file

# clang-tidy needs the compile database; configuring is enough, but the build
# target also makes sure generated files exist.
tidy: build
	run-clang-tidy -quiet -p $(BUILD_DIR) -j $(JOBS) -extra-arg=-Wno-unknown-warning-option '^$(CURDIR)/src/'

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR) $(TSAN_DIR) build-k8s

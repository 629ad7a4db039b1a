#!/usr/bin/env bash
# bench/syscall-cost.sh: what iotrace's write tracing costs the system calls
# of every process on the host, and those of the traced process (the
# broker), per way of attaching its programs.
#
# While any program is attached to a system call tracepoint, the kernel
# sets SYSCALL_WORK_SYSCALL_TRACEPOINT on every thread of every process
# (syscall_regfunc, kernel/tracepoint.c), so every system call takes the
# slow entry and exit path and calls the sys_enter and sys_exit
# tracepoints; there is no per-process, per-PID-namespace or per-cgroup
# scoping of that, and a program's tgid check comes after it. What can
# differ is the work between the tracepoint and that check. Variants:
#
#   none         nothing attached
#   floor        iotrace's fdatasync pair alone, on
#                syscalls:sys_{enter,exit}_fdatasync, which dd never calls:
#                what every system call pays before any program runs for it
#   tracepoints  iotrace's 14 programs on the syscalls tracepoints
#                (syscalls:sys_enter_write, ...): every write of every
#                process fills a perf trace record and runs the program
#   raw          2 programs on the raw syscalls tracepoints
#                (raw_syscalls:sys_enter/sys_exit as raw tracepoints), built
#                here around iotrace's code: every system call of every
#                process runs them (tgid check first, then the system call
#                number), with no trace record
#
# Workloads, each a dd (if=/dev/zero) moving MIB MiB one byte at a time:
#   mix            bs=1 to /dev/null: as many reads as writes (the dd of
#                  bench/iotrace.sh), a process that is not traced
#   reads          ibs=1 obs=1M: reads only, standing for any system call
#                  that is not a traced write; not traced
#   writes         ibs=1M obs=1 to /dev/null: writes only; not traced
#   file           ibs=1M obs=1 to a tmpfs file: writes only; not traced
#   t_reads, t_null, t_file: reads, writes and file as the traced process
#                  (its tgid is the programs' target; exec'd from a shell
#                  the programs were attached for): t_null's writes are
#                  looked up and dropped (not a regular file), as a
#                  broker's socket writes; t_file writes in the traced log
#                  directory, every write timed and counted, as a broker's
#                  segment writes (the script checks they were all counted)
# timed by CPU time (user + system, from bash's `time` on the dd process:
# waits for a CPU under other load are not counted). Figures are ns per system call over `none` in the same round
# (paired), median and range over ROUNDS rounds; the variants' order
# rotates each round, so that other load on the machine hits them all.
# After each round, both program sets are attached at once for MIX_SECONDS
# to count the machine's system calls and its write-family calls, and the
# per-call costs are applied to that mix.
#
# Timing runs have kernel.bpf_stats_enabled=0 (the kernel's default; with
# it on, every program run is bracketed by two sched_clock reads). Separate
# runs with it on give the programs' run_time_ns/run_cnt (bpftool); the
# setting is restored at exit. The programs are loaded by the iotrace
# package's test binary (TestSyscallCostHelper, internal/iotrace/
# syscallcost_test.go): tracepoints through iotrace.Open; raw from an
# object this script builds with clang-14 from bpf/iotrace.bpf.c plus two
# raw tracepoint programs calling its on_enter/on_exit (below; x86-64
# registers), set up as Open sets up iotrace's. Before each timed run the
# script checks (bpftool perf) that no other process has a program on a
# system call tracepoint; it waits up to FOREIGN_WAIT seconds, and a run
# made with one attached is marked and left out of the figures.
#
#   bench/syscall-cost.sh    # ROUNDS=5 MIB=4 MIX_SECONDS=10 FOREIGN_WAIT=120
#
# Needs root (eBPF), bpftool, jq, clang-14 and libbpf-dev. Refuses to run
# while bench/iotrace.sh or bench/sched-cost.sh (which also switch
# kernel.bpf_stats_enabled) run.
# bench/syscall-cost-results.md holds a run's output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${ROUNDS:-5}"
mib="${MIB:-4}"
mix_seconds="${MIX_SECONDS:-10}"
foreign_wait="${FOREIGN_WAIT:-120}"
work="${KSCOPE_BENCH_DIR:-/dev/shm/kscope-syscost}"
variants=(none floor tracepoints raw)
export LC_ALL=C

if pgrep -f 'bench/(iotrace|sched-cost)\.sh' >/dev/null; then
  echo "bench/syscall-cost.sh: bench/iotrace.sh or bench/sched-cost.sh is running (both switch kernel.bpf_stats_enabled); run later" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work/logdir"
CGO_ENABLED=0 go test -c -o "$work/iotrace.test" ./internal/iotrace
# The raw variant: iotrace's programs plus two on the raw syscalls
# tracepoints, which every system call of every process runs: the tgid is
# checked first, then the system call number; the traced calls go through
# iotrace's own on_enter and on_exit.
cat >"$work/raw.bpf.c" <<'EOF'
#include "iotrace.bpf.c"

struct pt_regs {
	unsigned long r10;
	unsigned long di;
	unsigned long orig_ax;
} __attribute__((preserve_access_index));

/* The traced calls' numbers, set by the loader. */
const volatile __s64 nr_write = -1;
const volatile __s64 nr_pwrite64 = -1;
const volatile __s64 nr_writev = -1;
const volatile __s64 nr_pwritev = -1;
const volatile __s64 nr_pwritev2 = -1;
const volatile __s64 nr_fsync = -1;
const volatile __s64 nr_fdatasync = -1;

static __always_inline __u32 op_of(__s64 nr)
{
	if (nr == nr_write)
		return OP_WRITE;
	if (nr == nr_pwrite64)
		return OP_PWRITE64;
	if (nr == nr_writev)
		return OP_WRITEV;
	if (nr == nr_pwritev)
		return OP_PWRITEV;
	if (nr == nr_pwritev2)
		return OP_PWRITEV2;
	if (nr == nr_fsync)
		return OP_FSYNC;
	if (nr == nr_fdatasync)
		return OP_FDATASYNC;
	return OP_MAX;
}

SEC("raw_tracepoint/sys_enter")
int ksio_raw_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) != targ_tgid)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	__u32 op = op_of((__s64)ctx->args[1]);
	if (op == OP_MAX)
		return 0;
	/* The same record the syscalls tracepoints pass: fd and offset. */
	struct sys_enter_ctx c = {};
	c.args[0] = BPF_CORE_READ(regs, di);
	__s64 pos = -2; /* write, writev: the file position */
	if (op == OP_FSYNC || op == OP_FDATASYNC)
		pos = -1;
	else if (op == OP_PWRITE64 || op == OP_PWRITEV || op == OP_PWRITEV2)
		pos = (__s64)BPF_CORE_READ(regs, r10);
	if (op == OP_PWRITEV2 && pos == -1)
		pos = -2;
	return on_enter(&c, op, pos);
}

SEC("raw_tracepoint/sys_exit")
int ksio_raw_exit(struct bpf_raw_tracepoint_args *ctx)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) != targ_tgid)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	if (op_of((__s64)BPF_CORE_READ(regs, orig_ax)) == OP_MAX)
		return 0;
	struct sys_exit_ctx c = {};
	c.ret = (__s64)ctx->args[1];
	return on_exit(&c);
}
EOF
clang-14 -O2 -g -Wall -Werror -target bpfel -I/usr/include/x86_64-linux-gnu -I"$root/bpf" \
  -c "$work/raw.bpf.c" -o "$work/raw.o"
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  local s fd
  for s in 0 1; do
    fd=${helper_fd[s]:-}
    if [[ -n "$fd" ]]; then exec {fd}>&- || true; fi
    if [[ -n "${helper_pid[s]:-}" ]]; then wait "${helper_pid[s]}" 2>/dev/null || true; fi
  done
  if [[ -n "${traced_pid:-}" ]]; then kill "$traced_pid" 2>/dev/null || true; fi
  if [[ -n "${sleeper:-}" ]]; then kill "$sleeper" 2>/dev/null || true; fi
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before" || true
  rm -rf "$work"
}
trap cleanup EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# helper_start SLOT VARIANT PID: attaches VARIANT's programs in helper SLOT
# (0 or 1) with PID as the traced process; sets helper_ids[SLOT].
# helper_stop SLOT detaches them.
declare -a helper_pid=("" "") helper_fd=("" "") helper_ids=("" "")
helper_start() {
  local s=$1 fd
  rm -f "$work/helper$s.in"
  mkfifo "$work/helper$s.in"
  KSCOPE_SYSCALL_COST="$2" KSCOPE_SYSCALL_COST_PID="$3" KSCOPE_SYSCALL_COST_DIR="$work/logdir" KSCOPE_SYSCALL_COST_OBJ="$work/raw.o" \
    "$work/iotrace.test" -test.run '^TestSyscallCostHelper$' <"$work/helper$s.in" >"$work/helper$s.out" 2>&1 &
  helper_pid[s]=$!
  exec {fd}>"$work/helper$s.in"
  helper_fd[s]=$fd
  for _ in $(seq 300); do
    grep -q '^ready' "$work/helper$s.out" && break
    kill -0 "${helper_pid[s]}" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^ready' "$work/helper$s.out" || { cat "$work/helper$s.out" >&2; exit 1; }
  helper_ids[s]=$(awk '$1 == "ids" {$1 = ""; print}' "$work/helper$s.out")
}
helper_stop() {
  local s=$1 fd=${helper_fd[$1]}
  exec {fd}>&-
  helper_fd[s]=""
  wait "${helper_pid[s]}" || { cat "$work/helper$s.out" >&2; exit 1; }
  helper_counted=$(awk '$1 == "counted" {print $2}' "$work/helper$s.out")
  helper_pid[s]=""
  helper_ids[s]=""
}

# foreign: the other processes' programs on system call tracepoints.
foreign() {
  local ids=" ${helper_ids[0]} ${helper_ids[1]} "
  bpftool perf 2>/dev/null | awk -v ids="$ids" '/sys_(enter|exit)/ {
    for (i = 1; i <= NF; i++) if ($i == "prog_id") id = $(i + 1)
    if (index(ids, " " id " ") == 0) print }'
}
# wait_clean: waits up to FOREIGN_WAIT s for foreign programs to go; prints
# "F" (and logs them) if they stay, "-" otherwise.
wait_clean() {
  local f
  for _ in $(seq $((foreign_wait / 2 + 1))); do
    f=$(foreign)
    [[ -z "$f" ]] && { echo -; return; }
    sleep 2
  done
  printf '%s\n' "$f" >>"$work/foreign.log"
  echo F
}

# bpf_sum IDS...: run_time_ns and run_cnt summed over the programs.
bpf_sum() {
  local t=0 c=0 id j
  for id in "$@"; do
    j=$(bpftool prog show id "$id" -j)
    t=$((t + $(jq -r '.run_time_ns // 0' <<<"$j")))
    c=$((c + $(jq -r '.run_cnt // 0' <<<"$j")))
  done
  echo "$t $c"
}
bpf_delta() { awk -v a="$1" -v b="$2" 'BEGIN{split(a, x); split(b, y); print y[1] - x[1], y[2] - x[2]}'; }

# The workloads: dd's arguments and its system calls.
n=$((mib * 1048576))
declare -A args calls
args[mix]="if=/dev/zero of=/dev/null bs=1 count=$n"
calls[mix]=$((2 * n))
args[reads]="if=/dev/zero of=/dev/null ibs=1 obs=1M count=$n"
calls[reads]=$n
args[writes]="if=/dev/zero of=/dev/null ibs=1M obs=1 count=$mib"
calls[writes]=$n
args[file]="if=/dev/zero of=$work/untraced.dat ibs=1M obs=1 count=$mib"
calls[file]=$n
args[t_reads]=${args[reads]}
calls[t_reads]=$n
args[t_null]=${args[writes]}
calls[t_null]=$n
args[t_file]="if=/dev/zero of=$work/logdir/traced.dat ibs=1M obs=1 count=$mib"
calls[t_file]=$n
untraced=(mix reads writes file)
traced=(t_reads t_null t_file)

# timed_wait PID: waits for the dd PID (a child of this shell) and sets out
# to its CPU seconds (user + system) and its own wall seconds. No command
# substitution here: wait only reaps this shell's own children.
out=""
timed_wait() {
  local TIMEFORMAT='%3U %3S'
  { time wait "$1"; } 2>"$work/time.out"
  out=$(awk 'NR == FNR {cpu = $1 + $2; next} /copied/ {w = $(NF - 3)} END {printf "%.3f %s\n", cpu, w}' "$work/time.out" "$work/dd.err")
}

# run_untraced WORKLOAD: runs it; sets out to "cpu wall".
run_untraced() {
  # shellcheck disable=SC2086
  dd ${args[$1]} 2>"$work/dd.err" &
  timed_wait $!
}

# traced_start WORKLOAD: starts a shell that becomes dd (exec, same pid)
# when released; sets traced_pid. traced_run: releases it, sets out.
traced_pid=""
traced_start() {
  rm -f "$work/go"
  mkfifo "$work/go"
  # shellcheck disable=SC2086
  (read -r _ <"$work/go" && exec dd ${args[$1]}) 2>"$work/dd.err" &
  traced_pid=$!
}
traced_run() {
  echo go >"$work/go"
  timed_wait "$traced_pid"
  traced_pid=""
}

results="$work/results" # round variant workload flag cpu wall [bpf_ns bpf_runs]
: >"$results"
record() { echo "$*" >>"$results"; }

# measure ROUND VARIANT: one round of VARIANT's runs.
measure() {
  local r=$1 v=$2 flag b0 b1 w
  sysctl -q -w kernel.bpf_stats_enabled=0
  # The untraced workloads, then each traced one, each traced process
  # under its own attach.
  for w in "${traced[@]}"; do
    traced_start "$w"
    if [[ "$v" != none ]]; then helper_start 0 "$v" "$traced_pid"; fi
    if [[ "$w" == t_reads ]]; then
      for u in "${untraced[@]}"; do
        flag=$(wait_clean); run_untraced "$u"; record "$r $v $u $flag $out"
      done
    fi
    flag=$(wait_clean); traced_run; record "$r $v $w $flag $out"
    if [[ "$v" != none ]]; then
      helper_stop 0
      if [[ "$w" == t_file && -n "$helper_counted" ]]; then echo "$v $helper_counted" >>"$work/counted"; fi
    fi
  done
  # With the BPF statistics on: an untraced mix, then a traced file.
  if [[ "$v" != none ]]; then
    traced_start t_file
    helper_start 0 "$v" "$traced_pid"
    sysctl -q -w kernel.bpf_stats_enabled=1
    # shellcheck disable=SC2086
    flag=$(wait_clean); b0=$(bpf_sum ${helper_ids[0]}); run_untraced mix; b1=$(bpf_sum ${helper_ids[0]})
    record "$r $v mix_stats $flag $out $(bpf_delta "$b0" "$b1")"
    # shellcheck disable=SC2086
    flag=$(wait_clean); b0=$(bpf_sum ${helper_ids[0]}); traced_run; b1=$(bpf_sum ${helper_ids[0]})
    record "$r $v t_file_stats $flag $out $(bpf_delta "$b0" "$b1")"
    sysctl -q -w kernel.bpf_stats_enabled=0
    helper_stop 0
  fi
  rm -f "$work/untraced.dat" "$work/logdir/traced.dat"
}

# mix_window ROUND: the machine's system call mix. Both program sets are
# attached (to a sleeping process) for MIX_SECONDS with the statistics on:
# ksio_raw_enter runs once per system call of every process, the ksio_e_*
# programs once per write-family call.
sleeper=""
mix_window() {
  local id enter_ids="" raw_enter="" a0 a1 w0 w1 t0 t1 flag
  sleep 3600 &
  sleeper=$!
  helper_start 0 raw "$sleeper"
  helper_start 1 tracepoints "$sleeper"
  for id in ${helper_ids[1]}; do
    bpftool prog show id "$id" -j | jq -e '.name | startswith("ksio_e_")' >/dev/null && enter_ids+=" $id"
  done
  for id in ${helper_ids[0]}; do
    bpftool prog show id "$id" -j | jq -e '.name == "ksio_raw_enter"' >/dev/null && raw_enter=$id
  done
  sysctl -q -w kernel.bpf_stats_enabled=1
  flag=$(wait_clean)
  # shellcheck disable=SC2086
  a0=$(bpf_sum $raw_enter); w0=$(bpf_sum $enter_ids); t0=$(date +%s%N)
  sleep "$mix_seconds"
  # shellcheck disable=SC2086
  a1=$(bpf_sum $raw_enter); w1=$(bpf_sum $enter_ids); t1=$(date +%s%N)
  sysctl -q -w kernel.bpf_stats_enabled=0
  helper_stop 1
  helper_stop 0
  kill "$sleeper"
  wait "$sleeper" 2>/dev/null || true
  sleeper=""
  awk -v r="$1" -v f="$flag" -v a="$(bpf_delta "$a0" "$a1")" -v w="$(bpf_delta "$w0" "$w1")" -v t=$((t1 - t0)) \
    'BEGIN {split(a, x); split(w, y); printf "%s %s %.0f %.0f\n", r, f, x[2] / (t / 1e9), y[2] / (t / 1e9)}' >>"$work/mix"
}

run_untraced mix # warm-up: page cache, binaries
for r in $(seq "$rounds"); do
  nv=${#variants[@]}
  for i in $(seq 0 $((nv - 1))); do
    measure "$r" "${variants[$(((i + r - 1) % nv))]}"
  done
  mix_window "$r"
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Report.
# med: median [min, max] of the values on stdin, with format $1.
med() {
  sort -g | awk -v f="$1" '{v[NR] = $1} END {
    if (NR == 0) {printf "-"; exit}
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf f, m, v[1], v[NR] }'
}
# paired VARIANT WORKLOAD: ns per call over none, one line per round.
paired() {
  awk -v v="$1" -v w="$2" -v n="${calls[$2]}" '
    $3 == w && $4 != "F" && $2 == "none" {base[$1] = $5}
    $3 == w && $4 != "F" && $2 == v {x[$1] = $5}
    END {for (r in x) if (r in base) print (x[r] - base[r]) * 1e9 / n}' "$results"
}
median_of() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# bench/syscall-cost.sh"
echo
echo "- started $started; kernel $(uname -r), $(nproc) cores; load average $load_start at the start, $load_end at the end (other work on the machine: $(pgrep -c java || true) java processes at the end)"
echo "- ROUNDS=$rounds MIB=$mib: dd moves $n bytes one byte at a time; CPU time (user + system) of each dd, from bash's time"
echo "- timing runs with kernel.bpf_stats_enabled=0; BPF run time from separate runs with it on (it was $stats_before before; restored)"
echo "- writes of each traced file dd counted by the programs (want $n, and 3 more: dd's report to its stderr, a file on the same tmpfs): $(awk '{c[$1] = c[$1] " " $2} END {for (v in c) printf "%s:%s; ", v, c[v]}' "$work/counted")"
echo "- runs made while another process had a program on a system call tracepoint, left out: $(awk '$4 == "F"' "$results" | wc -l)"
if [[ -s "$work/foreign.log" ]]; then sort -u "$work/foreign.log" | sed 's/^/  - /'; fi
echo
echo "Workloads (dd, if=/dev/zero):"
echo
echo "- mix: of=/dev/null bs=1, ${calls[mix]} calls, half read, half write (bench/iotrace.sh's dd), not traced"
echo "- reads: ibs=1 obs=1M, $n reads, not traced: any system call that is not a traced write"
echo "- writes: ibs=1M obs=1 to /dev/null, $n writes, not traced"
echo "- file: ibs=1M obs=1 to a tmpfs file, $n writes, not traced"
echo "- t_reads, t_null, t_file: reads, writes and file as the traced process (the programs' target tgid; t_file in the traced log directory: every write timed and counted, as a broker's segment writes; t_null: the fd is looked up and is not a regular file, as a broker's socket writes)"
echo
echo "## ns per system call over none (paired by round): median [min, max]"
echo
echo "| variant | programs | mix | reads | writes | file | t_reads | t_null | t_file |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for v in "${variants[@]}"; do
  [[ "$v" == none ]] && continue
  case "$v" in floor) np=2 ;; tracepoints) np=14 ;; raw) np=2 ;; esac
  row="| $v | $np |"
  for w in "${untraced[@]}" "${traced[@]}"; do
    row+=" $(paired "$v" "$w" | med '%+.0f [%+.0f, %+.0f]') |"
  done
  echo "$row"
done
echo
echo "none, CPU ns per system call: median [min, max]:"
echo
for w in "${untraced[@]}" "${traced[@]}"; do
  echo "- $w: $(awk -v w="$w" -v n="${calls[$w]}" '$2 == "none" && $3 == w && $4 != "F" {print $5 * 1e9 / n}' "$results" | med '%.0f [%.0f, %.0f]')"
done
echo
echo "## BPF run time (runs with kernel.bpf_stats_enabled=1), median [min, max] over rounds"
echo
echo "- untraced mix: the variant's program runs while the untraced mix ran (those of every other process too): ns per run, and runs per second"
echo "- traced file: the programs' run time per system call of the traced dd (other processes' runs in that window included)"
echo
echo "| variant | untraced: ns per run | untraced: runs/s | traced file: BPF ns per call | traced file: ns per run | untraced mix CPU ns per call with stats on, over none |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for v in "${variants[@]}"; do
  [[ "$v" == none ]] && continue
  nsrun=$(awk -v v="$v" '$2 == v && $3 == "mix_stats" && $4 != "F" && $8 > 0 {print $7 / $8}' "$results" | med '%.1f [%.1f, %.1f]')
  rps=$(awk -v v="$v" '$2 == v && $3 == "mix_stats" && $4 != "F" && $6 > 0 {print $8 / $6}' "$results" | med '%.0f [%.0f, %.0f]')
  tcall=$(awk -v v="$v" -v n="${calls[t_file]}" '$2 == v && $3 == "t_file_stats" && $4 != "F" {print $7 / n}' "$results" | med '%.1f [%.1f, %.1f]')
  trun=$(awk -v v="$v" '$2 == v && $3 == "t_file_stats" && $4 != "F" && $8 > 0 {print $7 / $8}' "$results" | med '%.1f [%.1f, %.1f]')
  over=$(awk -v v="$v" -v n="${calls[mix]}" '$3 == "mix" && $2 == "none" && $4 != "F" {b[$1] = $5}
    $3 == "mix_stats" && $2 == v && $4 != "F" {x[$1] = $5}
    END {for (r in x) if (r in b) print (x[r] - b[r]) * 1e9 / n}' "$results" | med '%+.0f [%+.0f, %+.0f]')
  echo "| $v | $nsrun | $rps | $tcall | $trun | $over |"
done
echo
echo "## The whole machine at its system call mix"
echo
echo "After each round, both program sets attached at once for ${mix_seconds} s (ksio_raw_enter's run count: every system call of every process; the ksio_e_* programs': write, pwrite64, writev, pwritev, pwritev2, fsync and fdatasync calls), with the other work on the machine running as during the rounds:"
echo
echo "| round | system calls/s | write-family calls/s | share of writes |"
echo "| ---: | ---: | ---: | ---: |"
awk '{printf "| %s%s | %s | %s | %.1f%% |\n", $1, ($2 == "F" ? " (F)" : ""), $3, $4, ($3 > 0 ? $4 / $3 * 100 : 0)}' "$work/mix"
echo
echo "What the machine's untraced system calls would pay at each round's mix, at the median costs per call above (an untraced process's reads standing for every call that is not a write), as % of $(nproc) cores: median [min, max] over the rounds' mixes"
echo
echo "| variant | % of the machine |"
echo "| --- | ---: |"
for v in "${variants[@]}"; do
  [[ "$v" == none ]] && continue
  cr=$(paired "$v" reads | median_of)
  cw=$(paired "$v" writes | median_of)
  echo "| $v | $(awk -v cr="${cr:-0}" -v cw="${cw:-0}" -v c="$(nproc)" '$2 != "F" {print (($3 - $4) * cr + $4 * cw) / (c * 1e9) * 100}' "$work/mix" | med '%.3f [%.3f, %.3f]') |"
done
echo
echo "## Per round: CPU seconds of each dd ((F): another process's program was attached)"
echo
hdr="| round | variant |"; sep="| ---: | --- |"
for w in "${untraced[@]}" "${traced[@]}"; do hdr+=" $w |"; sep+=" ---: |"; done
echo "$hdr"; echo "$sep"
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    row="| $r | $v |"
    for w in "${untraced[@]}" "${traced[@]}"; do
      row+=" $(awk -v r="$r" -v v="$v" -v w="$w" '$1 == r && $2 == v && $3 == w {printf "%s%s", $5, ($4 == "F" ? " (F)" : "")}' "$results") |"
    done
    echo "$row"
  done
done

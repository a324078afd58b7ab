#!/bin/sh
# hosts-bench.sh: what custom domains cost an edit that has nothing to do
# with them (issue 6: at most 1.1 times the time and the memory).
#
#	bench/hosts-bench.sh [VAULT] [EDITS] [ROUNDS]
#
# Makes two copies of VAULT (default bench/vaults/v10k): one as it is, one
# where 50 published notes claim routes on three hosts (two strict, one
# open, configured in quire.yml). Then runs build/bench/apply-bench on each,
# alternately, ROUNDS times: the same EDITS random edits, none of them of a
# routed note, pinned to one core. Prints per-edit p50 (wall and CPU) and
# peak memory of each run and the ratios routes/plain of the medians.
# With CALLGRIND=N it also counts, under callgrind, the instructions of N
# edits in each copy (one loader thread): the figure that does not move
# when the machine is busy.
set -eu
VAULT=${1:-bench/vaults/v10k}
EDITS=${2:-200}
ROUNDS=${3:-3}
CORE=${CORE:-1}
BIN=build/bench/apply-bench
[ -x "$BIN" ] || { echo "hosts-bench: build first (ninja -C build)" >&2; exit 1; }
[ -d "$VAULT" ] || { echo "hosts-bench: no vault $VAULT (bench/genvault writes one)" >&2; exit 1; }

work=$(mktemp -d /tmp/quire-hosts-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# 50 published notes, spread over the vault: every (count/50)-th in path order
(cd "$VAULT" && find . -name '*.md' -not -path '*/.*' | sed 's|^\./||' | LC_ALL=C sort) > "$work/all"
total=$(wc -l < "$work/all")
step=$((total / 60))
awk -v s="$step" 'NR % s == 0' "$work/all" | while IFS= read -r p; do
	if ! grep -q -E '^(draft: true|publish: false)' "$VAULT/$p"; then printf '%s\n' "$p"; fi
done | head -50 > "$work/routed"
[ "$(wc -l < "$work/routed")" -eq 50 ] || { echo "hosts-bench: could not pick 50 notes" >&2; exit 1; }

fresh() { # fresh DIR [routes]: a copy of the vault, with routes when asked
	rm -rf "$1"
	cp -r "$VAULT" "$1"
	rm -rf "$1/.quire"
	[ "${2:-}" = routes ] || return 0
	printf 'hosts:\n  wiki.example.org:\n    open: true\n    title: Wiki\n' >> "$1/quire.yml"
	i=0
	while IFS= read -r p; do
		case $((i % 3)) in
		0) r="docs.example.com/p$i" ;;
		1) r="blog.example.net/post-$i" ;;
		*) r="wiki.example.org/w/$i" ;;
		esac
		[ $i -eq 0 ] && r="docs.example.com/"
		f="$1/$p"
		if head -1 "$f" | grep -q '^---$'; then
			{ echo '---'; echo "routes: [$r]"; tail -n +2 "$f"; } > "$f.tmp"
		else
			{ echo '---'; echo "routes: [$r]"; echo '---'; cat "$f"; } > "$f.tmp"
		fi
		mv "$f.tmp" "$f"
		i=$((i + 1))
	done < "$work/routed"
}

run() { # run MODE ROUND: prints "p50 rss cpu-p50"
	fresh "$work/$1" "$1"
	APPLY_SKIP="$work/routed" taskset -c "$CORE" "$BIN" "$work/$1" "$EDITS" 7 > "$work/out" 2>/dev/null
	p50=$(sed -n 's/.*per edit p50 \([0-9.]*\) ms.*/\1/p' "$work/out")
	rss=$(sed -n 's/^peak resident memory: \([0-9]*\) MB/\1/p' "$work/out")
	cpu=$(sed -n 's/^CPU time per edit (all threads): p50 \([0-9.]*\) ms.*/\1/p' "$work/out")
	load=$(sed -n 's/.*loaded in \([0-9]*\) ms/\1/p' "$work/out")
	echo "$1 round $2: load $load ms, per edit p50 $p50 ms (CPU $cpu ms), peak memory $rss MB" >&2
	echo "$p50 $rss $cpu"
}

: > "$work/plain.txt"
: > "$work/routes.txt"
round=1
while [ $round -le "$ROUNDS" ]; do
	run plain $round >> "$work/plain.txt"
	run routes $round >> "$work/routes.txt"
	round=$((round + 1))
done
if [ -n "${CALLGRIND:-}" ]; then
	for mode in plain routes; do
		fresh "$work/$mode" "$mode"
		APPLY_SKIP="$work/routed" APPLY_THREADS=1 valgrind --tool=callgrind \
			--callgrind-out-file="$work/cg.$mode" --collect-atstart=no \
			--toggle-collect=one_edit "$BIN" "$work/$mode" "$CALLGRIND" 7 >/dev/null 2>&1
		n=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/cg.$mode")
		echo "$mode: $n instructions in $CALLGRIND edits, $((n / CALLGRIND)) per edit"
		echo "$n" > "$work/ir.$mode"
	done
	echo "callgrind instructions per edit, routes/plain: $(echo "scale=4; $(cat "$work/ir.routes") / $(cat "$work/ir.plain")" | bc)"
fi
# what a page of the open host costs on its first request
fresh "$work/routes" routes
taskset -c "$CORE" build/bench/host-page-bench "$work/routes" wiki.example.org 500 2>/dev/null || true

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
pp=$(cut -d' ' -f1 "$work/plain.txt" | median)
rp=$(cut -d' ' -f1 "$work/routes.txt" | median)
pm=$(cut -d' ' -f2 "$work/plain.txt" | median)
rm_=$(cut -d' ' -f2 "$work/routes.txt" | median)
pc=$(cut -d' ' -f3 "$work/plain.txt" | median)
rc=$(cut -d' ' -f3 "$work/routes.txt" | median)
echo "vault $VAULT, $EDITS edits of unrouted notes, $ROUNDS rounds each, core $CORE"
echo "median per-edit p50: plain $pp ms, 50 routes on 3 hosts $rp ms, ratio $(echo "scale=3; $rp / $pp" | bc)"
echo "median per-edit CPU p50: plain $pc ms, with routes $rc ms, ratio $(echo "scale=3; $rc / $pc" | bc)"
echo "median peak memory: plain $pm MB, with routes $rm_ MB, ratio $(echo "scale=3; $rm_ / $pm" | bc)"

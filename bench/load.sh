#!/bin/sh
# Full-load figures: quire export of the real corpus, several runs, with
# wall time and peak memory (GNU time). Prints one line per run and the
# median. Usage: bench/load.sh [VAULT] [RUNS]
set -eu
cd "$(dirname "$0")/.."
vault=${1:-../shared/corpus/pwsh-docs}
runs=${2:-5}
bin=build/quire
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
notes=$(find "$vault" -name '*.md' -not -path '*/.*' | wc -l)
echo "vault: $vault ($notes notes), $(nproc) cores, $runs runs"
i=0
: > "$out/times"
while [ $i -lt "$runs" ]; do
	rm -rf "$out/site"
	/usr/bin/time -f '%e %M' -o "$out/t" "$bin" export --vault "$vault" --out "$out/site" 2> "$out/log" >/dev/null
	read -r secs kb < "$out/t"
	ms=$(echo "$secs * 1000" | bc | cut -d. -f1)
	echo "run $((i + 1)): ${ms} ms wall, peak RSS $((kb / 1024)) MB; $(grep '^loaded' "$out/log")"
	echo "$ms" >> "$out/times"
	i=$((i + 1))
done
med=$(sort -n "$out/times" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median export wall time: ${med} ms for $notes notes ($(echo "$notes * 1000 / $med" | bc) notes/s)"

#!/bin/sh
# bench/highlight.sh [VAULT] [ROUNDS]: what highlighting code blocks costs a
# load (issue 13: at most 1.5 times the load without it).
#
# Copies VAULT (default bench/vaults/v10k) twice, one copy with
# `highlight: false` added to its quire.yml, and loads each ROUNDS times
# (default 5), alternating, with build/bench/apply-bench (the loader in
# process, both cores, one cheap edit after the load); prints every load
# time, the median of each, and their ratio. Figures, not assertions: on a
# shared machine compare the ratio, not the times.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
vault=${1:-$here/bench/vaults/v10k}
rounds=${2:-5}
bin=$here/build/bench/apply-bench
[ -x "$bin" ] || { echo "highlight.sh: build first (make build)" >&2; exit 1; }
[ -d "$vault" ] || { echo "highlight.sh: no vault $vault (bench/genvault makes one)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$vault" "$tmp/on"
rm -rf "$tmp/on/.quire"
cp -r "$tmp/on" "$tmp/off"
printf '\nhighlight: false\n' >> "$tmp/off/quire.yml"
blocks=$(grep -rh '^```[A-Za-z]' "$tmp/on" --include='*.md' | wc -l)
echo "vault $vault: $blocks fenced blocks with a language; $rounds loads each, alternating"
on=""
off=""
i=0
while [ "$i" -lt "$rounds" ]; do
	for mode in off on; do
		ms=$(APPLY_KIND=edit "$bin" "$tmp/$mode" 1 2>/dev/null |
			sed -n 's/.* notes loaded in \([0-9]*\) ms/\1/p')
		echo "  $mode: $ms ms"
		if [ "$mode" = on ]; then on="$on $ms"; else off="$off $ms"; fi
	done
	i=$((i + 1))
done
median() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
m_on=$(median $on)
m_off=$(median $off)
echo "load median: highlighted $m_on ms, plain $m_off ms, ratio $(echo "scale=3; $m_on / $m_off" | bc)"

#!/bin/sh
# endpoints.sh: throughput of what issue 5 adds, through HTTP, beside a page.
#
#	sh bench/endpoints.sh [VAULT] [SECONDS]
#
# Serves VAULT (default bench/vaults/v10k, made by bench/genvault) with one
# serving thread pinned to core 0 and no search rate limit (so that the
# limiter does not answer instead of the server), waits until the search
# index is filled, then runs wrk pinned to core 1 with 64 connections
# against: a note page, /sitemap.xml, a sitemap shard, /rss.xml, and
# /api/search with one word, two frequent words (twice), a rare word, a
# phrase and a prefix; then "varied": every request a different pair of
# the vault's 3,000 most frequent words, so that no figure comes from
# something a reader kept from an earlier identical query (search.c keeps
# the number of rows of each phrase until the index changes: the pairs come
# back only after 1,500 requests, when most of those counts are gone).
# Prints requests per second, requests per second of the server's own CPU
# time (user + system, from /proc: what one core would serve, the figure to
# compare when other work shares the machine), and the non-2xx count of
# each (a 429 or 5xx would be a wrong figure).
#
# QUIRE=path/to/quire runs another build (to compare two in one session);
# SEARCH_ONLY=1 skips the page, sitemaps and feed.
set -eu
cd "$(dirname "$0")/.."
vault=${1:-bench/vaults/v10k}
secs=${2:-5}
quire=${QUIRE:-build/quire}
port=$((30000 + $$ % 20000))
copy=$(mktemp -d)
cp -r "$vault"/. "$copy"/
rm -rf "$copy/.quire"
taskset -c 0 "$quire" serve --vault "$copy" --listen 127.0.0.1:$port --threads 1 \
	--no-watch --search-rate 0 > "$copy.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$copy" "$copy.log" "$copy.lua"' EXIT

# the varied queries: pairs of frequent words, each word in one pair only
find "$copy" -name '*.md' -exec cat {} + | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' |
	awk 'length($0) >= 4' | sort | uniq -c | sort -rn | head -3000 | awk '
	{ w[NR] = $2 }
	END {
		print "local q = {"
		for (i = 1; i + 1 <= NR; i += 2)
			printf "\"/api/search?q=%s+%s\",\n", w[i], w[(i + 1500) % NR + 1]
		print "}"
		print "local n = 0"
		print "request = function() n = n % #q + 1; return wrk.format(nil, q[n]) end"
	}' > "$copy.lua"

until grep -q "search index ready" "$copy.log" 2>/dev/null; do sleep 0.2; done
echo "vault $vault; $quire; wrk -t1 -c64 -d${secs}s on core 1, server on core 0"
printf '%-40s %10s %10s %8s\n' endpoint req/s req/cpu-s non2xx
tck=$(getconf CLK_TCK)
targets="/api/search?q=pipeline /api/search?q=pipeline+object /api/search?q=command+parameter
/api/search?q=object+value /api/search?q=ipv6 /api/search?q=%22remote+computer%22
/api/search?q=param* varied"
if [ "${SEARCH_ONLY:-0}" != 1 ]; then
	page=$(curl -s http://127.0.0.1:$port/_quire/tree.json | grep -o '"url":"[^"]*"' | sed -n 5p | cut -d'"' -f4)
	targets="$page /sitemap.xml /sitemap-0.xml /rss.xml $targets"
fi
for target in $targets; do
	cpu0=$(awk '{print $14 + $15}' /proc/$pid/stat)
	if [ "$target" = varied ]; then
		out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" -H 'Accept-Encoding: gzip' -s "$copy.lua" \
			"http://127.0.0.1:$port/" 2>&1)
	else
		out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" -H 'Accept-Encoding: gzip' \
			"http://127.0.0.1:$port$target" 2>&1)
	fi
	cpu=$(($(awk '{print $14 + $15}' /proc/$pid/stat) - cpu0))
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	per_cpu=$(echo "$out" | awk -v c=$cpu -v t=$tck '/requests in/ {if (c > 0) printf "%.0f", $1 / (c / t)}')
	bad=$(echo "$out" | awk '/Non-2xx/ {print $5}')
	printf '%-40s %10s %10s %8s\n' "$target" "$rps" "$per_cpu" "${bad:-0}"
done

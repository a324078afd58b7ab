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
# /api/search with one and with two words. Prints requests per second and
# the non-2xx count of each (a 429 or 5xx would be a wrong figure).
set -eu
cd "$(dirname "$0")/.."
vault=${1:-bench/vaults/v10k}
secs=${2:-5}
port=$((30000 + $$ % 20000))
copy=$(mktemp -d)
cp -r "$vault"/. "$copy"/
rm -rf "$copy/.quire"
taskset -c 0 build/quire serve --vault "$copy" --listen 127.0.0.1:$port --threads 1 \
	--no-watch --search-rate 0 > "$copy.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$copy" "$copy.log"' EXIT
until grep -q "search index ready" "$copy.log" 2>/dev/null; do sleep 0.2; done
page=$(curl -s http://127.0.0.1:$port/_quire/tree.json | grep -o '"url":"[^"]*"' | sed -n 5p | cut -d'"' -f4)
echo "vault $vault; page $page; wrk -t1 -c64 -d${secs}s on core 1, server on core 0"
printf '%-34s %10s %8s\n' endpoint req/s non2xx
for target in "$page" /sitemap.xml /sitemap-0.xml /rss.xml "/api/search?q=pipeline" \
	"/api/search?q=pipeline+object"; do
	out=$(taskset -c 1 wrk -t1 -c64 -d"${secs}s" -H 'Accept-Encoding: gzip' \
		"http://127.0.0.1:$port$target" 2>&1)
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	bad=$(echo "$out" | awk '/Non-2xx/ {print $5}')
	printf '%-34s %10s %8s\n' "$target" "$rps" "${bad:-0}"
done

#!/bin/sh
# http-vs-nginx.sh: quire's HTTP front against nginx, serving the same bytes.
#
# Writes a ~10 KB HTML page and its .gz into a temp dir. nginx (one worker,
# gzip_static, open_file_cache, access_log off: nginx at its best for a
# static file) serves /page via try_files $uri.html; quire serves the same
# two files from a one-page snapshot (bench/http-bench-server.c, one loop).
# Both servers are pinned to core 0 and wrk to core 1, runs alternate
# quire/nginx, at 1, 64 and 512 connections, with and without gzip.
#
#	sh bench/http-vs-nginx.sh [path/to/http-bench-server]
#
# Besides requests per second, the table shows each server's CPU time per
# request (user + system, from /proc/PID/stat, softirq work done in its
# syscalls included): on a shared or noisy machine that figure holds still
# when throughput does not. The last column is quire's allocations per
# request over the run (jemalloc's count, read from the bench server's
# /allocs before and after): the connections' own, made once each, over
# the requests they carried.
#
# Environment: DURATION (seconds per run, default 5), CONNS (default
# "1 64 512"), REPEAT (runs per cell, best kept, default 1), SERVER_CORE
# (default 0), CLIENT_CORE (default 1). Without an argument the bench
# server is build/bench/http-bench-server (built by ninja -C build).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
DURATION=${DURATION:-5}
CONNS=${CONNS:-"1 64 512"}
REPEAT=${REPEAT:-1}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}

for tool in nginx wrk taskset curl gzip; do
	command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
		echo "http-vs-nginx: $tool is missing (apt-get install nginx-light wrk curl)" >&2
		exit 1
	}
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

tmp=$(mktemp -d /tmp/quire-bench-XXXXXX)
chmod 755 "$tmp" # nginx's worker may run as another user
nginx_pid=
quire_pid=
cleanup() {
	[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
	[ -n "$quire_pid" ] && kill "$quire_pid" 2>/dev/null && wait "$quire_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ $# -ge 1 ]; then
	server=$1
else
	server=$root/build/bench/http-bench-server
	ninja -C "$root/build" bench/http-bench-server >/dev/null
fi

# The page: realistic HTML, about 10 KB, with prose that compresses like
# prose (about 3:1), not like a repeated line.
mkdir -p "$tmp/www" "$tmp/nginx"
awk 'BEGIN {
	srand(42);
	n = split("the of and to in is that for it as with was on be by this are or from " \
		"vault note link page graph obsidian markdown quire render snapshot server " \
		"request header cache gzip engine publish website folder attachment heading " \
		"paragraph example between through because although whenever meanwhile " \
		"Zettelkasten backlinks frontmatter callout embed transclusion wikilink", w, " ");
	printf "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
	printf "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
	printf "<title>Bench page</title><link rel=\"stylesheet\" href=\"/_quire/quire.0123abcd.css\">";
	printf "</head><body><nav class=\"tree\"><ul>";
	for (i = 0; i < 12; i++)
		printf "<li><a href=\"/notes/%s-%d\">%s %d</a></li>", w[int(rand() * n) + 1], i, w[int(rand() * n) + 1], i;
	printf "</ul></nav><main><article><h1>Bench page</h1>\n";
	size = 0;
	while (size < 9000) {
		line = "<p>";
		for (j = 0; j < 40; j++) {
			word = w[int(rand() * n) + 1];
			if (rand() < 0.05)
				word = sprintf("<a href=\"/notes/%s\">%s</a>", word, word);
			line = line word " ";
		}
		line = line "</p>\n";
		printf "%s", line;
		size += length(line);
	}
	printf "</article></main></body></html>\n";
}' >"$tmp/www/page.html"
gzip -6 -n -k "$tmp/www/page.html"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

nginx_port=$(free_port)
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 4096; }
http {
	types { text/html html; }
	default_type text/html;
	access_log off;
	sendfile on;
	tcp_nopush on;
	tcp_nodelay on;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	open_file_cache max=1000 inactive=60s;
	gzip_static on;
	client_body_temp_path $tmp/nginx/body;
	proxy_temp_path $tmp/nginx/proxy;
	fastcgi_temp_path $tmp/nginx/fastcgi;
	uwsgi_temp_path $tmp/nginx/uwsgi;
	scgi_temp_path $tmp/nginx/scgi;
	server {
		listen 127.0.0.1:$nginx_port reuseport;
		root $tmp/www;
		location / { try_files \$uri.html =404; }
	}
}
EOF
taskset -c "$SERVER_CORE" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
nginx_pid=$!

taskset -c "$SERVER_CORE" "$server" "$tmp/www/page.html" "$tmp/www/page.html.gz" 0 1 >"$tmp/quire.out" &
quire_pid=$!
i=0
while ! grep -q '^ready' "$tmp/quire.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "http-vs-nginx: quire did not start" >&2; exit 1; }
	sleep 0.05
done
quire_port=$(awk '/^ready/ { print $2 }' "$tmp/quire.out")
i=0
while ! curl -sf -o /dev/null "http://127.0.0.1:$nginx_port/page"; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "http-vs-nginx: nginx did not start" >&2; tail -3 "$tmp/nginx/error.log" >&2; exit 1; }
	sleep 0.05
done

# Same bytes from both, both ways.
for enc in identity gzip; do
	curl -sf -H "Accept-Encoding: $enc" -o "$tmp/q.$enc" "http://127.0.0.1:$quire_port/page"
	curl -sf -H "Accept-Encoding: $enc" -o "$tmp/n.$enc" "http://127.0.0.1:$nginx_port/page"
	cmp -s "$tmp/q.$enc" "$tmp/n.$enc" || { echo "http-vs-nginx: bodies differ ($enc)" >&2; exit 1; }
done
echo "page: $(wc -c <"$tmp/www/page.html") bytes, gzip $(wc -c <"$tmp/www/page.html.gz") bytes;" \
	"servers on core $SERVER_CORE, wrk on core $CLIENT_CORE, ${DURATION}s per run"

nginx_worker=$(pgrep -P "$nginx_pid" | head -n 1)
[ -n "$nginx_worker" ] || { echo "http-vs-nginx: no nginx worker" >&2; exit 1; }
tck=$(getconf CLK_TCK)
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# allocs PORT: quire's allocations so far (jemalloc's count, /allocs), or "-"
allocs() {
	[ "$1" = "$quire_port" ] && curl -sf "http://127.0.0.1:$1/allocs" | grep -E '^[0-9]+$' || echo -
}

# run PORT PID CONNS GZIP: "req/s µs-per-request allocations-per-request", best of REPEAT runs
run() {
	best=0
	best_us=
	per=-
	r=0
	while [ $r -lt "$REPEAT" ]; do
		a0=$(allocs "$1")
		t0=$(cpu_ticks "$2")
		if [ "$4" = yes ]; then
			out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c"$3" -d"${DURATION}s" \
				-H 'Accept-Encoding: gzip' "http://127.0.0.1:$1/page")
		else
			out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c"$3" -d"${DURATION}s" \
				"http://127.0.0.1:$1/page")
		fi
		t1=$(cpu_ticks "$2")
		a1=$(allocs "$1")
		errors=$(echo "$out" | awk '/Non-2xx|Socket errors/ { print }')
		[ -n "$errors" ] && echo "  (port $1, $3 conns, gzip $4: $errors)" >&2
		v=$(echo "$out" | awk '/Requests\/sec/ { printf "%d", $2 }')
		us=$(echo "$out" | awk -v t=$((t1 - t0)) -v tck="$tck" \
			'/requests in/ { if ($1 > 0) printf "%.2f", t / tck * 1e6 / $1 }')
		[ "$a0" != - ] && [ "$a1" != - ] && per=$(echo "$out" | awk -v a=$((a1 - a0)) \
			'/requests in/ { if ($1 > 0) printf "%.4f", a / $1 }')
		[ "${v:-0}" -gt "$best" ] && best=$v
		if [ -z "$best_us" ] || awk -v a="$us" -v b="$best_us" 'BEGIN { exit !(a < b) }'; then
			best_us=$us
		fi
		r=$((r + 1))
	done
	echo "$best $best_us $per"
}

# warm up both
taskset -c "$CLIENT_CORE" wrk -t1 -c16 -d1s "http://127.0.0.1:$quire_port/page" >/dev/null
taskset -c "$CLIENT_CORE" wrk -t1 -c16 -d1s "http://127.0.0.1:$nginx_port/page" >/dev/null

printf '%-11s %-4s %11s %11s %6s   %12s %12s %12s\n' connections gzip "quire req/s" "nginx req/s" ratio \
	"quire us/req" "nginx us/req" "quire allocs"
for c in $CONNS; do
	for gz in no yes; do
		set -- $(run "$quire_port" "$quire_pid" "$c" "$gz")
		q=$1 qus=$2 qa=$3
		set -- $(run "$nginx_port" "$nginx_worker" "$c" "$gz")
		n=$1 nus=$2
		ratio=$(awk -v q="$q" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", q / n; else print "-" }')
		printf '%-11s %-4s %11s %11s %6s   %12s %12s %12s\n' "$c" "$gz" "$q" "$n" "$ratio" "$qus" "$nus" "$qa"
	done
done

-- check.lua: a wrk script that counts a response as a success only when it
-- is the right one, and reports the counts as one JSON line.
--
--	wrk ... -s bench/check.lua URL -- STATUS ENCODING LENGTH MARKER
--
-- STATUS   the status a right answer has (200, or 404 for a missing page)
-- ENCODING "gzip" or "identity": the Content-Encoding a right answer has
-- LENGTH   its body's length in bytes, 0 when it varies (health, search)
-- MARKER   a string its body contains (identity only: wrk has no inflate,
--          so a gzip body is checked by its encoding and exact length, and
--          bench/run checks its decompressed bytes once before the level)
--
-- Why: wrk's own summary counts any 2xx or 3xx as a success, so a rate
-- limiter's answer, a JSON error object or an empty search would be
-- counted as throughput. Per-response checks slow wrk down a little;
-- bench/run records wrk's CPU time so that a client-bound level shows.
--
-- done() prints "BENCH {...}" with wrk's totals, errors by kind (connect:
-- refused; read/write: reset or closed; timeout; status: >= 400) and the
-- latency percentiles in microseconds.

local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	want_status = tonumber(args[1])
	want_gzip = args[2] == "gzip"
	want_length = tonumber(args[3]) or 0
	marker = args[4] or ""
	ok = 0
	bad_status = 0
	bad_body = 0
end

local function header(headers, name)
	local v = headers[name]
	if v then
		return v
	end
	name = string.lower(name)
	for k, val in pairs(headers) do
		if string.lower(k) == name then
			return val
		end
	end
	return nil
end

function response(status, headers, body)
	if status ~= want_status then
		bad_status = bad_status + 1
		return
	end
	local good = (want_length == 0 or #body == want_length)
	if want_gzip then
		good = good and header(headers, "Content-Encoding") == "gzip"
	else
		good = good and header(headers, "Content-Encoding") == nil and
			string.find(body, marker, 1, true) ~= nil
	end
	if good then
		ok = ok + 1
	else
		bad_body = bad_body + 1
	end
end

function done(summary, latency, requests)
	local o, s, b = 0, 0, 0
	for _, t in ipairs(threads) do
		o = o + t:get("ok")
		s = s + t:get("bad_status")
		b = b + t:get("bad_body")
	end
	local e = summary.errors
	io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"bytes":%d,' ..
		'"ok":%d,"bad_status":%d,"bad_body":%d,"connect":%d,"read":%d,' ..
		'"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,' ..
		'"p99_us":%d,"max_us":%d}\n',
		summary.requests, summary.duration, summary.bytes, o, s, b,
		e.connect, e.read, e.write, e.status, e.timeout,
		latency:percentile(50), latency:percentile(90), latency:percentile(99),
		latency.max))
end

-- wrk script shared by every endpoint of bench/run.sh. The request comes from the environment so the
-- same script serves GETs with API-key headers and the MCP POST:
--   BENCH_METHOD   GET (default) or POST
--   BENCH_BODY     request body (POST)
--   BENCH_HEADERS  "Name: value" lines separated by newlines
-- At the end it prints one JSON line (prefixed BENCH_RESULT) that run.sh parses; wrk's own report
-- goes to the same stdout above it.

wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
  wrk.body = body
end
local headers = os.getenv("BENCH_HEADERS") or ""
for line in headers:gmatch("[^\n]+") do
  local name, value = line:match("^%s*([^:]+):%s*(.-)%s*$")
  if name then
    wrk.headers[name] = value
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,"p90_us":%d,"p99_us":%d,'
      .. '"max_us":%d,"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end

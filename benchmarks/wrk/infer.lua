-- wrk script for the Open Inference Protocol: POSTs one request body to /v2/models/NAME/infer over
-- and over, and writes a JSON summary. Arguments come through the environment, which every wrk
-- Lua state (the threads', and the one that runs done) can read:
--   WRK_BODY           the request body's file
--   WRK_HEADER_LENGTH  its Inference-Header-Content-Length (binary tensor data), or empty for JSON
--   WRK_SUMMARY        where done() writes the JSON summary
--   WRK_THREADS, WRK_CONNECTIONS  copied into the summary
--
--   WRK_BODY=body.json WRK_SUMMARY=out.json wrk -t4 -c64 -d5s -s infer.lua http://127.0.0.1:8000/v2/models/mlp/infer

local request_bytes

function init(args)
   local file = assert(io.open(os.getenv("WRK_BODY"), "rb"))
   local body = file:read("*a")
   file:close()
   local headers = {}
   local header_length = os.getenv("WRK_HEADER_LENGTH")
   if header_length ~= nil and header_length ~= "" then
      headers["Content-Type"] = "application/octet-stream"
      headers["Inference-Header-Content-Length"] = header_length
   else
      headers["Content-Type"] = "application/json"
   end
   request_bytes = wrk.format("POST", nil, headers, body)
end

function request()
   return request_bytes
end

function done(summary, latency, requests)
   local seconds = summary.duration / 1e6
   local e = summary.errors
   local out = assert(io.open(os.getenv("WRK_SUMMARY"), "w"))
   out:write(string.format(
      '{"threads":%d,"connections":%d,"seconds":%.3f,"requests":%d,"requests_per_second":%.1f,' ..
      '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f,' ..
      '"non_2xx":%d,"socket_errors":%d,"timeouts":%d}\n',
      tonumber(os.getenv("WRK_THREADS") or "0"), tonumber(os.getenv("WRK_CONNECTIONS") or "0"), seconds,
      summary.requests, summary.requests / seconds,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
      latency.max, latency.mean, e.status, e.connect + e.read + e.write, e.timeout))
   out:close()
end

-- wrk script of `make bench`'s ingest round (target (i), scripts/bench.sh): every request a POST of
-- a random user of the pool with an event id no other request used.
--   BENCH_INGEST=action      POST /api/v1/popups/BENCH_ACTION_POPUP/actions, a click: the action path
--   BENCH_INGEST=conversion  POST /api/v1/conversions of goal BENCH_GOAL (default "bench"), without a
--                            value (a value needs an ingest key, docs/CONTRACT.md §14)
local pool = tonumber(os.getenv("BENCH_UIDS") or "100000")
local kind = os.getenv("BENCH_INGEST") or "action"
local popup = os.getenv("BENCH_ACTION_POPUP") or "1"
local goal = os.getenv("BENCH_GOAL") or "bench"
local prefix, n = "", 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  -- per thread and run: with the counter, an event id no earlier request used
  prefix = "w" .. os.time() .. "x" .. math.random(0, 2^30) .. "x"
end

function request()
  n = n + 1
  local uid = "user-" .. math.random(0, pool - 1)
  if kind == "conversion" then
    return wrk.format(nil, "/api/v1/conversions", nil,
      '{"uid":"' .. uid .. '","goal":"' .. goal .. '","event_id":"' .. prefix .. n .. '"}')
  end
  return wrk.format(nil, "/api/v1/popups/" .. popup .. "/actions", nil,
    '{"uid":"' .. uid .. '","action":"click","event_id":"' .. prefix .. n .. '"}')
end

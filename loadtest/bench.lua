-- wrk script of `make bench`: every request is a random user of the pool with that user's stable
-- platform, version and region (the same mapping as benchtool's query()). The reference server
-- ignores the query, so both sides of the A/B pay the same load-generator cost.
-- BENCH_QUERY_REGION=rec sends region=rec instead: the popup seeded for it (benchtool seed -record)
-- is returned on every call, so every request also runs the record script (make bench's run C).
local pool = tonumber(os.getenv("BENCH_UIDS") or "100000")
local regions = tonumber(os.getenv("BENCH_REGIONS") or "8")
local platforms = {"ios", "android", "web"}
local fixed_region = os.getenv("BENCH_QUERY_REGION") or ""

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
end

function request()
  local i = math.random(0, pool - 1)
  return wrk.format("GET", "/api/v1/popup?uid=user-" .. i .. "&platform=" .. platforms[i % 3 + 1] ..
    "&app_version=8." .. (i % 13) .. ".0&region=" .. (fixed_region ~= "" and fixed_region or ("r" .. (i % regions))) .. "&lang=en")
end

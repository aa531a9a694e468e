-- wrk script of `make bench`: every request is a random user of the pool with that user's stable
-- platform, version and region (the same mapping as benchtool's query()). The reference server
-- ignores the query, so both sides of the A/B pay the same load-generator cost.
-- BENCH_QUERY_REGION=rec sends region=rec instead: the popup seeded for it (benchtool seed -record)
-- is returned on every call, so every request also runs the record script (make bench's run C).
local pool = tonumber(os.getenv("BENCH_UIDS") or "100000")
local regions = tonumber(os.getenv("BENCH_REGIONS") or "8")
local platforms = {"ios", "android", "web"}
local fixed_region = os.getenv("BENCH_QUERY_REGION") or ""
-- BENCH_UID_MODE: pool (default) a uniform user of the pool; fresh: every request a uid never
-- seen before (first visits); zipf: a user of BENCH_ZIPF_USERS (1,000,000) drawn from a Zipf
-- distribution (s = 1: a few users return often, most rarely; those beyond the warmed pool are
-- new on their first request). uid i keeps the pool's mapping to platform, version and region.
local mode = os.getenv("BENCH_UID_MODE") or "pool"
local zipf_users = tonumber(os.getenv("BENCH_ZIPF_USERS") or "1000000")
local log_zipf = math.log(zipf_users + 1)
local fresh_prefix, fresh_n = "", 0
-- BENCH_ATTRS=1 (make bench's run K): each GET also carries the attributes the run's rules read,
-- attr.plan=pro for an even uid and free for an odd one, and attr.build=9.2.0 (benchtool's query
-- sends the same with BENCH_ATTRS=1)
local with_attrs = os.getenv("BENCH_ATTRS") == "1"
local function attrs(i)
  if not with_attrs then return "" end
  return "&attr.plan=" .. (i % 2 == 0 and "pro" or "free") .. "&attr.build=9.2.0"
end

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  -- per thread and run: with the counter, a uid no earlier request used
  fresh_prefix = "fv" .. os.time() .. "x" .. math.random(0, 2^30) .. "x"
end

local function pick()
  if mode == "fresh" then
    fresh_n = fresh_n + 1
    return fresh_prefix .. fresh_n, fresh_n
  elseif mode == "zipf" then
    -- inverse of the continuous approximation of Zipf(s = 1) over 1..N: P(rank <= k) ~ ln(k+1)/ln(N+1)
    local i = math.floor(math.exp(math.random() * log_zipf)) - 1
    return "user-" .. i, i
  end
  local i = math.random(0, pool - 1)
  return "user-" .. i, i
end

function request()
  local uid, i = pick()
  return wrk.format("GET", "/api/v1/popup?uid=" .. uid .. "&platform=" .. platforms[i % 3 + 1] ..
    "&app_version=8." .. (i % 13) .. ".0&region=" .. (fixed_region ~= "" and fixed_region or ("r" .. (i % regions))) .. "&lang=en" .. attrs(i))
end

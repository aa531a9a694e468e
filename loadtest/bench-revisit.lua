-- wrk script of make bench's run J, the revisit mix (issue 57): users rv0..rv(N-1) of
-- BENCH_MIX_USERS (200,000) drawn from a Zipf distribution (s = 1: a few return often, most
-- rarely), each with a stable platform and region (BENCH_MIX_PREFIX .. uid % BENCH_MIX_REGIONS, the
-- codes benchtool mix spreads its popups over) and app version 9.2.0. The bare server ignores the
-- query, so both sides of the A/B pay the same load-generator cost.
local users = tonumber(os.getenv("BENCH_MIX_USERS") or "200000")
local regions = tonumber(os.getenv("BENCH_MIX_REGIONS") or "10")
local prefix = os.getenv("BENCH_MIX_PREFIX") or "m"
local platforms = {"ios", "android", "web"}
local log_users = math.log(users + 1)
-- BENCH_ATTRS=1 (make bench's run K): each GET also carries the attributes the run's rules read,
-- attr.plan=pro for an even uid and free for an odd one, and attr.build=9.2.0
local with_attrs = os.getenv("BENCH_ATTRS") == "1"
local function attrs(i)
  if not with_attrs then return "" end
  return "&attr.plan=" .. (i % 2 == 0 and "pro" or "free") .. "&attr.build=9.2.0"
end

-- A seed given after wrk's `--` makes the sequence repeatable (scripts/bench-revs.sh sends two
-- builds the same users); without one every run draws afresh.
local counter = 1
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end

function init(args)
  if args[1] then
    math.randomseed(1000 * tonumber(args[1]) + tid)
  else
    math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  end
end

function request()
  -- inverse of the continuous approximation of Zipf(s = 1) over 1..N: P(rank <= k) ~ ln(k+1)/ln(N+1)
  local i = math.floor(math.exp(math.random() * log_users)) - 1
  return wrk.format("GET", "/api/v1/popup?uid=rv" .. i .. "&platform=" .. platforms[i % 3 + 1] ..
    "&app_version=9.2.0&region=" .. prefix .. (i % regions) .. "&lang=en" .. attrs(i))
end

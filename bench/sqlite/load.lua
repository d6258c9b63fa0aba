-- The one load generator of bench/sqlite: wrk drives both servers with it, so both see the same
-- mix of requests. Arguments (after wrk's `--`):
--   <op: read|insert> <target: hostplane|pocketbase> <rows> <id prefix> <a> <b> [<c>]
--   hostplane:  a = scoped token, b = origin, c = user token ("-": none, the bare-token mode)
--   pocketbase: a = collection, b = auth record token ("-": none, public rules)
-- read:   a point read of a random seeded row by primary key (ids r00000000000001 …);
-- insert: one new row, its id unique per thread and run (<prefix><thread 2 digits><counter 12>).
-- Every id is 15 characters of [a-z0-9], the shape PocketBase's records require.
local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("tid", thread_count)
  table.insert(threads, thread)
end

local op, target, rows, prefix
local collection = "items"
local counter = 0
local json_headers, get_headers

function init(args)
  op, target, rows, prefix = args[1], args[2], tonumber(args[3]), args[4]
  json_headers = { ["Content-Type"] = "application/json" }
  get_headers = {}
  if target == "hostplane" then
    json_headers["X-Sqlite-Token"] = args[5]
    json_headers["Origin"] = args[6]
    if args[7] and args[7] ~= "-" then json_headers["X-Sqlite-User-Token"] = args[7] end
  else
    collection = args[5] or "items"
    if args[6] and args[6] ~= "-" then
      json_headers["Authorization"] = args[6]
      get_headers["Authorization"] = args[6]
    end
  end
  math.randomseed(os.time() + (tid or 0) * 7919)
end

local function read_request()
  local id = string.format("r%014d", math.random(rows))
  if target == "pocketbase" then
    return wrk.format("GET", "/api/collections/" .. collection .. "/records/" .. id, get_headers)
  end
  return wrk.format("POST", "/api/v1/sqlite/query", json_headers,
    '{"sql":"SELECT id, title, n FROM items WHERE id = ?","params":["' .. id .. '"]}')
end

local function insert_request()
  counter = counter + 1
  local id = string.format("%s%02d%012d", prefix, tid, counter)
  if target == "pocketbase" then
    return wrk.format("POST", "/api/collections/" .. collection .. "/records", json_headers,
      '{"id":"' .. id .. '","title":"title ' .. id .. '","n":' .. counter .. '}')
  end
  return wrk.format("POST", "/api/v1/sqlite/exec", json_headers,
    '{"sql":"INSERT INTO items (id, title, n) VALUES (?, ?, ?)","params":["' .. id ..
    '","title ' .. id .. '",' .. counter .. ']}')
end

function request()
  if op == "read" then return read_request() end
  return insert_request()
end

-- One JSON line the benchmark parses (latencies in microseconds).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end

-- wrk script: PUT /v1/items/{unique id} with a 4 KiB body, a bearer token from $TOKEN and the id
-- as Idempotency-Key, so every request is a new item (201).
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  counter = 0
  body = string.rep("x", 4096)
  headers = {
    ["Authorization"] = "Bearer " .. os.getenv("TOKEN"),
    ["Content-Type"] = "application/octet-stream",
  }
end

function request()
  counter = counter + 1
  local id = tid .. "-" .. counter
  headers["Idempotency-Key"] = id
  return wrk.format("PUT", "/v1/items/" .. id, headers, body)
end

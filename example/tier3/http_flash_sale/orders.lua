-- wrk script: POST /orders, one unit per order, with order ids that repeat.
--
--   wrk ... -s orders.lua http://127.0.0.1:PORT -- POOL ITEMS
--
-- POOL is how many distinct order ids there are (o-0 .. o-POOL-1), ITEMS the items on sale,
-- comma-separated. Every wrk thread walks the same sequence of ids, so each id arrives from
-- several connections at about the same time (concurrent duplicates), and again once the
-- sequence wraps around (late duplicates, as a client's retry).

local pool, items, sent = 1000, { "apple" }, 0

function init(args)
    pool = tonumber(args[1]) or pool
    if args[2] then
        items = {}
        for item in string.gmatch(args[2], "[^,]+") do
            items[#items + 1] = item
        end
    end
end

function request()
    local id = sent % pool
    sent = sent + 1
    local body = string.format('{"order_id":"o-%d","item":"%s","qty":1}', id,
        items[id % #items + 1])
    return wrk.format("POST", "/orders", { ["Content-Type"] = "application/json" }, body)
end

-- One line for load.sh to read.
function done(summary, latency, requests)
    io.write(string.format("wrk-summary requests=%d seconds=%.3f rps=%.0f p50_ms=%.3f " ..
        "p99_ms=%.3f max_ms=%.3f socket_errors=%d\n",
        summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
        summary.errors.connect + summary.errors.read + summary.errors.write +
        summary.errors.timeout))
end

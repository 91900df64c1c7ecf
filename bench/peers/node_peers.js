// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The npm peers of `corolock-bench`, on the server given, over ONE ioredis connection each,
// with the loads corolock's figures use (bench/peers/README.md):
//   node-redlock (redlock) and redis-semaphore's Mutex: uncontended cycles at 1, 50 and 256
//     workers, each on its own name, lease 10 s; contended, 50 workers on one name holding 0
//     and 1 ms;
//   redis-semaphore's Semaphore of 5: 50 workers holding 1 ms;
//   rate-limiter-flexible's RateLimiterRedis: consume(1) at 1 and 64 workers, a limit that
//     admits every call.
// One JSON object a figure on stdout: peer, figure, workers, per_s, p99_ms (of the acquire),
// client and server CPU us per cycle (process.cpuUsage; the server's INFO cpu).
// usage: node node_peers.js <host> <port> <seconds>
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');
const { Mutex, Semaphore } = require('redis-semaphore');
const { RateLimiterRedis } = require('rate-limiter-flexible');

const [host, port, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg || 3);
const warmupMs = 500;

async function serverCpu(client) {
  const info = await client.info('cpu');
  const get = (k) => Number((info.match(new RegExp(k + ':([0-9.]+)')) || [0, 0])[1]);
  return get('used_cpu_sys') + get('used_cpu_user');
}

function p99(samples) {
  if (samples.length === 0) return null;
  samples.sort((a, b) => a - b);
  return samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))];
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `workers` loops of `cycle(i)` (an acquire, an optional hold, a release; it returns the
// acquire's latency in ms) for `seconds` after a warm-up.
async function measure(client, peer, figure, workers, cycle) {
  let stop = false, timed = false, cycles = 0, errors = 0, firstError = '';
  const waits = [];
  const loops = [];
  for (let i = 0; i < workers; ++i) {
    loops.push((async () => {
      while (!stop) {
        try {
          const wait = await cycle(i);
          if (timed) {
            ++cycles;
            waits.push(wait);
          }
        } catch (e) {
          ++errors;
          if (!firstError) firstError = String(e && e.message || e);
          await sleep(10);
        }
      }
    })());
  }
  await sleep(warmupMs);
  const s0 = await serverCpu(client);
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  timed = true;
  await sleep(seconds * 1000);
  timed = false;
  const t1 = process.hrtime.bigint();
  const c1 = process.cpuUsage(c0);
  const s1 = await serverCpu(client);
  stop = true;
  await Promise.all(loops);
  const elapsed = Number(t1 - t0) / 1e9;
  const out = {
    peer, figure, workers,
    per_s: cycles / elapsed,
    p99_ms: p99(waits),
    client_cpu_us: cycles ? (c1.user + c1.system) / cycles : null,
    server_cpu_us: cycles ? (s1 - s0) * 1e6 / cycles : null,
    errors, first_error: firstError,
  };
  console.log(JSON.stringify(out));
}

async function timedAcquire(f) {
  const t = process.hrtime.bigint();
  const r = await f();
  return [r, Number(process.hrtime.bigint() - t) / 1e6];
}

async function main() {
  const client = new Redis({ host, port: Number(port), lazyConnect: false, maxRetriesPerRequest: 1 });
  await client.ping();
  const lease = 10000;

  // node-redlock on one server: the quorum of one. Its retries are timers (no pub/sub).
  const redlock = new Redlock([client], { retryCount: -1, retryDelay: 10, retryJitter: 10 });
  const redlockCycle = (name, holdMs) => async () => {
    const [lock, wait] = await timedAcquire(() => redlock.lock(name, lease));
    if (holdMs) await sleep(holdMs);
    await lock.unlock();
    return wait;
  };
  for (const n of [1, 50, 256])
    await measure(client, 'node-redlock', 'uncontended', n,
      (i) => redlockCycle('peer:rl:' + i, 0)());
  for (const hold of [0, 1])
    await measure(client, 'node-redlock', 'contended hold ' + hold + ' ms', 50,
      () => redlockCycle('peer:rl:one', hold)());

  // redis-semaphore: Mutex and Semaphore, retried every 10 ms (its default), no pub/sub.
  const mutexCycle = (name, holdMs) => async () => {
    const m = new Mutex(client, name, { lockTimeout: lease, acquireTimeout: 60000, retryInterval: 10, refreshInterval: 0 });
    const [, wait] = await timedAcquire(() => m.acquire());
    if (holdMs) await sleep(holdMs);
    await m.release();
    return wait;
  };
  for (const n of [1, 50, 256])
    await measure(client, 'redis-semaphore Mutex', 'uncontended', n,
      (i) => mutexCycle('peer:rs:' + i, 0)());
  for (const hold of [0, 1])
    await measure(client, 'redis-semaphore Mutex', 'contended hold ' + hold + ' ms', 50,
      () => mutexCycle('peer:rs:one', hold)());
  await measure(client, 'redis-semaphore Semaphore(5)', 'contended hold 1 ms', 50, async () => {
    const s = new Semaphore(client, 'peer:sem', 5, { lockTimeout: lease, acquireTimeout: 60000, retryInterval: 10, refreshInterval: 0 });
    const [, wait] = await timedAcquire(() => s.acquire());
    await sleep(1);
    await s.release();
    return wait;
  });

  // rate-limiter-flexible: a limit that admits every call (each call writes, as a busy limiter).
  const limiter = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 1, keyPrefix: 'peer:rate' });
  for (const n of [1, 64])
    await measure(client, 'rate-limiter-flexible', 'consume', n, async () => {
      const [, wait] = await timedAcquire(() => limiter.consume('k', 1));
      return wait;
    });
  client.disconnect();
}

main().catch((e) => {
  console.error('node peers: ' + (e && e.stack || e));
  process.exit(1);
});

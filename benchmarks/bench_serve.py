"""``guard serve`` against the library in the same run: ``POST /v1/run`` next to ``Guard.run`` in process.

The server runs as its own process (``guard serve``, two workers by default) on 127.0.0.1 over the demo records
(a temporary SQLite file, or ``--db``, e.g. a PostgreSQL URL). A light asyncio client (:mod:`loadclient`: raw
HTTP/1.1 over keep-alive connections on uvloop, about 0.07 ms of CPU a request against the workers' ~0.9; the
httpx client it replaced cost more than the server and set the rate) reports:

- in process: ``AsyncGuard.run`` with 1 and 16 runs in flight;
- closed loop: 1, 16 and 64 requests kept in flight for ``--seconds`` each: requests per second, p50/p99;
- per core: the saturated rate divided by the workers, as a share of serial in-process ``Guard.run`` (one core);
  and, since the client and the database take their share of the same cores, the workers' CPU time per request
  (from /proc) against in-process ``Guard.run``'s CPU time per run, a per-core figure the client cannot skew
  (neither side counts the client's or PostgreSQL's CPU). That baseline runs alone, on a machine with one core
  busy; the workers are measured with both cores busy (two workers, the client, PostgreSQL), where the same code
  costs more a call. So two more baselines are printed beside it, the first figure unchanged: ``Guard.run`` in
  as many processes at once as there are workers, and ``Guard.run`` in one more process over the same seconds as
  the server at 64 in flight (that window's workers' CPU is its own reading: the extra process loads them too);
- open loop at half the saturated rate: requests sent on a fixed schedule, latency counted from the time each
  was due (so a stalled server cannot hide its queue), p50/p99;
- memory: the workers' resident set before and after ``--requests`` more requests;
- the machine's load average at the start and the end, since the client, the server and anything else running
  share the same cores: read the figures with it;
- with ``--profile DIR``: the workers run under cProfile on their CPU clock (``GUARD_SERVE_PROFILE``) and the
  report ends with their CPU time per ``/v1/run`` request by part (HTTP, framework, gate, database, logging,
  metrics, JSON, ...); the profiler slows the workers, so read the shares, not the rates, of such a run.

Loopback only; every loop is bounded in time or count.

Measured (2026-12-07 10:25-10:35, main at 2c88470 with serve17i and serve17j merged, PostgreSQL, 2 workers, on a
quiet machine: load average 0.35-1.67, CPU pressure 12-27%), ``--seconds 5``, twice (``--requests 5000``, then
``--requests 100000``):

- per core at saturation (wall rate at 64 in flight / 2 workers against serial ``Guard.run``): 0.83 x and 0.89 x
  (4600 and 4909 /s); by CPU time 0.80 x and 0.86 x; against ``Guard.run`` in 2 processes at once 0.69 x and
  0.78 x; against one ``Guard.run`` beside the saturated server 0.69 x and 0.70 x: the 0.6 target is met by all;
- open loop at half saturation (2300 and 2454 /s): p50 1.41 / 1.20 ms, **p99 12.6 / 8.0 ms** (target 25 ms);
- 1 / 16 / 64 in flight: p99 1.17 / 7.29 / 25.7 ms and 1.06 / 7.38 / 24.4 ms; errors 0 everywhere;
- memory of the 2 workers: 310.7 -> 311.0 MiB over 100,000 requests (+0.1%; 11 readings within 0.3 MiB).

The same code on the loaded machine (below) gave p99 19.8-105 ms: the tail follows CPU pressure from other work.

Measured (2026-12-07, PostgreSQL, 2 workers, 2 shared CPUs; base is main at a3a9abd, "after" branch serve17j;
other sessions' builds at nice 5-10 against this benchmark's nice 19 kept the CPU pressure, the share of time some
task waited for a CPU, now printed beside the load average, at 40-97%):

- where a slow request's time goes, open loop at 400-1150 /s (a probe outside the tree: guard's protocol with
  timestamps per request, matched to the client's by connection and sequence; ``gc.callbacks``; a 5 ms loop
  timer; ``/proc/thread-self/schedstat``): of the slowest 1% (20-90 ms), the client sent late by < 1 ms; 3-9
  ms in the socket before the worker read it, 1-6 ms from read to the application's task, the rest in the
  application, 12-34 ms of it awaiting its read (a batch at the database: p50 0.2-1.2, p99 3-8 ms, but 20-35
  ms for those overlapping the slow requests); over each slow request's life its worker waited 10-68 ms in the
  run queue, half to two thirds of the whole. No kernel accept queue (keep-alive connections), no thread
  hand-off (``asyncio.to_thread`` ran only for each worker's first lint-cache misses), metrics' flush 0.1 ms of
  CPU a second; the pool's semaphore (``pool_size`` 10) can be full only in bursts (11-22 in flight in the
  worker of a slow request), within the application's share, not measured apart;
- what changed: (1) each request left a reference cycle (``_HeadWithBody`` and uvicorn's cycle, 15 objects)
  only the collector freed: at 650 /s the two workers made 7-8 young collections in 5 s, each freeing 6,600-7,800
  objects in 2.8-4.5 ms of CPU (up to 30 ms of wall under load), and 10-19 of the slowest 32 requests
  overlapped one; the wrapper now lets go of its cycle when the response completes: 1-2 collections in 5 s,
  freeing nothing, 0.6-1.4 ms of CPU, under none of the slowest in three runs and 6 of 20 in a fourth
  (tests/server/test_protocol.py: 200 requests left 15 unreachable objects each, now 23 and 42 in all, for a
  plain app and for ``/v1/run``); (2) the open-loop client
  makes each request's task when it is due: made all at once, 5,750 tasks held the client's loop, the first
  requests went out up to 18 ms late and together, and 31 of a run's 57 slowest fell in its first 100 ms;
- paired (``serve_pair.py --open 400``, 8 rounds of 5 s, three sets): p99 this/base median 102/131 ms (load
  3.9-5.3), 3.4/4.1 ms (load 1.4-1.8), 26.4/45.0 ms (CPU pressure 87-93%); this lower in 6, 5 and 6 of 8
  rounds; workers' CPU a request 0.990, 0.970, 1.006; each alone in turn at 1150 /s (6 rounds, load 4.0-4.3),
  p99 median 43.6 (26.5-51.3) against base's 54.6 (36.0-93.9), lower in 5;
- ``bench_serve.py`` (``--seconds 5 --requests 5000``): main with its own client, p99 at half saturation 62 ms
  (649 /s, load 1.2-2.9) and 56 ms (1155 /s, load 1.7-2.4); main's server with this client 23.5 ms (749 /s,
  pressure 93%) and 30.8 ms (773 /s, 91%); after 19.8 ms (774 /s, 94%) and 22.4 ms (723 /s, 79%), and 105 ms
  earlier with the old client (1144 /s, load 2.4-2.7); half saturation here is half of what the closed loops
  reached at that moment, 649-1155 /s; memory +0.1%, no errors;
- the floor, open loop under the same client over two uvicorn workers with guard's loop and protocol, rounds
  interleaved: at 400 /s a trivial ASGI app p99 1.3-4.5 ms, one spinning 0.6 ms of CPU a request 2.0-7.4 ms,
  spinning and reading a row from PostgreSQL 2.3-36.6 ms, guard 2.5-22.7 ms; at 1150 /s (load 2.7-4.3) 1.1-4.3,
  2.2-104, 7.7-16.6 (one round collapsed) and 3.0-46.5 ms. With the machine to itself guard meets 25 ms at
  half saturation (3.0 ms at 1150 /s in the calm round); what sets the tail is CPU time other sessions hold:
  a request wakes a worker twice (request, row) and PostgreSQL once, at nice 19 against builds at nice 5-10,
  and any wake-up can wait a scheduler slice;
- tried, not kept: the collector off in workers with a young collection each second (0.1-0.4 ms each): paired
  at 500 /s lower in 7 of 8 rounds, roles swapped 4 of 8, alone at 1150 /s 80 against 44 ms (worse in 6 of 6);
  ``coalesce`` 1 or 4 against 2 at 500 /s: CPU 1.016 / 1.044, p99 lower in 3 / 4 of 8; the client reusing its
  connections oldest first instead of newest first (the requests split 50/50-67/33 between the workers either
  way, 98/2 once): no gain (p99 114 and 459 against 74 and 68 ms); the database deadline thread's tick at 1 s
  instead of 50 ms (fewer GIL hand-offs): 78 against 98 ms, 4 of 6, at CPU pressure 95%, unresolved. Not
  changed: a lint-cache miss's stages stay in a thread (0.2-0.3 ms of CPU for the demo's templates against a
  hop of 0.05 ms p50, 0.1 ms p99 on an idle loop; off this benchmark's path, so no figures to set a threshold).

Measured (2026-12-07, PostgreSQL, 2 workers, 2 shared CPUs; base is main at 4bae307, "after" branch serve17i;
load average 2-10 from other sessions, so only same-run ratios mean much):

- what changed: the reads of runs in flight in a worker are merged (``guard.records._coalesce``, ``serve.yaml``'s
  ``policies.*.coalesce``, default 2 in ``guard serve``, off in ``AsyncRecordStore``): reads submitted in one
  turn of the event loop, and while ``coalesce`` batches are at the database every read until one returns, go
  as one merged read per (entity, fields, principal) of up to ``batch_size`` ids, and the batch's merged reads
  in one ``aread_each`` (one kept connection); each run gets back the rows under its own id keys. Nothing waits
  on a timer: at 1 in flight a read waits one loop turn;
- paired (``serve_pair.py``, 5 s rounds), workers' CPU a request this/base: at 64 in flight, the bench's one
  payload (every run reads the same id under the same principal) 0.646 (0.586-0.665, 6 rounds, coalesce 1),
  0.650 (0.634-0.671, coalesce 2), 0.621 (0.549-0.644, 8 rounds, coalesce 2); ``--orders 2000`` (true answers
  about 2000 orders, each asked by its customer, so runs rarely share a principal and their statements are not
  merged, only sent together on one connection from one task) 0.805 (0.716-0.826, coalesce 1), 0.856
  (0.815-0.910, 2), 0.797 (0.763-0.863, 8 rounds, 2), 0.899 (0.789-0.915, 10); coalesce 0 against base 0.990
  (0.980-1.008: the reference path is unchanged); at 16 in flight 0.888 (0.743-1.007), at 1 in flight 1.019
  (0.960-1.124: the batch's future, task and loop turn, within noise); open loop at 400 /s each (one payload)
  1.006 (0.965-1.038), p99 this 11-31 ms against base 18-52 ms in the same rounds; at 600 /s each over 2000
  orders 1.034 (0.954-1.075), p50 0.91-1.12 against 0.89-1.04 ms, p99 3.5-97 against 5.5-124 ms (each round's
  pair swinging either way);
- ``bench_serve.py`` (``--seconds 5 --requests 5000``), coalesce 1 then base at load 4.4-7.2: workers at 64 in
  flight 0.357 against 0.530 ms a request (2757 against 1710 /s), per core by CPU time 0.76 x against 0.51 x,
  per core at saturation 0.62 x against 0.27 x; open loop at half saturation p99 55 ms (at 1378 /s) against
  131 ms (855 /s); with coalesce 2 (load 6.6-10.4, then 4.2-6.6) 0.419 and 0.465 ms (0.71 x and 0.64 x) against
  base's 0.693 ms (0.42 x, load 7.1-10.4); open loop p99 1757 ms (the first, its 16-in-flight rate half its
  64-in-flight one: the machine stalled) and 379 ms against base's 67 ms: the open-loop figure of one run is
  set by the load at that moment (the paired open loop above is the comparison); memory +0.1% / +0.2% over
  5,000 requests; no errors;
- tried, not kept: four times ``pool_size`` runs admitted per worker when reads are merged (more runs to merge):
  0.878 (0.853-0.908) against 0.805 with the usual ``pool_size``; coalesce 10 (as many batches as connections)
  merges less: 0.899. Not tried: sending a batch's statements for different principals in one round trip
  (psycopg's pipeline mode; an error there aborts the statements after it), and merging across principals
  with the scope selected and compared per run (rows of other customers would reach the worker's memory).

Measured (2026-12-07, PostgreSQL, 2 workers, 2 shared CPUs; base is main at 2a4f763, "after" branch serve17h;
load average 3-7 throughout from other sessions):

- where a worker's CPU goes (sampled: ITIMER_PROF in the workers, a harness outside the tree; and ablations,
  each part replaced by nothing in a throwaway tree, paired against base): without the gate (a canned decision)
  a worker spends 0.15 ms a request against 0.82 with it, so ``AsyncGuard.run`` is about 80% of it, though it
  costs 0.29-0.40 ms in process: in the workers the same functions each take 1.5-2x their in-process time
  (``Guard.run`` alone 0.29-0.31 ms a run; two at once 0.35-0.39; with the server saturated beside it 0.31-0.63).
  The rest, by ablation: the 200's ``to_dict`` and JSON 7%, the gate's metrics 3%, access line and HTTP metrics
  3%; uvicorn with a trivial app 0.04 ms a request; system calls (loopback sends to the client and PostgreSQL,
  psycopg's reader registration per statement, the rate file's lock, the kept connection's liveness poll)
  about a sixth, charged to their callers;
- what changed: (1) the 200 body by ``pydantic_core.to_json`` when the decision is plain JSON (no floats,
  ints within 64 bits, exact types; the same bytes, hypothesis tests), else the reference encoder; (2) without
  a log the gate counts a decision from its fields (``Metrics.observe_decision``) instead of building events to
  count: ``Guard._account`` 19-21 -> 12-14 us; (3) the kept PostgreSQL connection's cursor is used again
  (a fresh cursor cost its set-up and a loader lookup per column): ``AsyncGuard.run`` alone 0.34-0.38 ->
  0.31 ms;
- paired (``serve_pair.py``, 64 in flight each, 5 s rounds, 10 rounds): workers' CPU a request this/base
  0.997 (0.957-1.038, 6 rounds, (1) alone), 0.940 (0.876-0.996, (1)+(2)), 0.905 (0.799-0.980, all three) and
  0.878 (0.799-0.992, all three, load 5.3-7.3); base medians 0.94-1.18 ms, after 0.93-1.04 ms;
- ``bench_serve.py`` after, twice (``--seconds 5 --requests 5000``; load 5.8-6.2, then 7.1-7.9): ``Guard.run``
  0.285 / 0.321 ms alone, 0.364 / 0.336 ms two at once; ``AsyncGuard.run`` at 1 in flight 0.293 / 0.332 ms;
  workers at 64 in flight 0.755 / 1.076 ms a request (1276 / 548 /s); per core by CPU time 0.38 / 0.30 x
  (against two at once 0.48 / 0.31 x; against one beside the saturated server 0.34 / 0.47 x, whose workers
  read 0.898 / 1.032 ms in that window): target 0.6 not met by any of the three; open loop at half saturation
  p99 48 / 104 ms; memory +0.1% / +0.0% over 5,000 requests; no errors;
- tried, not kept: pool_size 3 (this/base 1.134) or 32 (0.943: no semaphore wait, but 64 backends a server);
  the workers pinned a core each (``sched_setaffinity``; 0.903 and 0.966 in two runs: too unsteady to make a
  default); ``model_validate_json`` on the raw payload (6.1 against 4.7 + 6.5 us for parse and validate, about
  1% of a request, and its errors differ); not tried: a psycopg wait that keeps the socket's reader registered
  between statements (registering and removing it costs ~8 us a statement in a micro-benchmark, but the driver
  may close and reuse the descriptor under it).

Measured (2026-12-07, PostgreSQL, 2 workers, 2 shared CPUs; base is main at 6735ac0, "after" branch serve17g;
other sessions kept the load average at 1.7-5.1, so only same-run ratios mean much):

- what changed, all outside ``AsyncGuard.run``'s reads: (1) a decision's metric events counted under one hold of
  the lock (``Metrics.observe_many``), a claim event's count and latency children found by one lookup on its
  (entity, field, status, domain) strings; (2) the access line written out directly (the text ``json.dumps``
  made of the same dict, ~0.3 against 2.6 us) and, in ``guard serve``'s own logging set-up, handed straight
  to its held handler (``plain_handler``; any other set-up takes the record's path, less the stack search);
  (3) ``/v1/run``'s query string parsed once per distinct string (256 kept, each at most 1 KiB); (4) the
  request's limit and the check (or lint) stage's on one timer (``Deadline``: set for the earliest moment any
  limit could run out, set again only when it goes off early): one timer a request instead of two
  ``asyncio.timeout``s; (5) uvicorn's keep-alive timer set once per idle spell instead of made and cancelled
  per response (``guard.server.protocol``);
- paired (``serve_pair.py``, 64 in flight each, 5 s rounds): workers' CPU a request this/base 0.906
  (0.841-0.975, 6 rounds, (1)-(3)), 0.939 (0.852-0.947, 6 rounds, (1)-(4)), 0.912 (0.825-0.998, 8 rounds) and
  0.891 (0.732-0.948, 8 rounds) with all five; base medians 1.15-1.30 ms, after 1.05-1.20 ms (both servers
  on the same two cores, so higher than alone);
- ``bench_serve.py`` after then base (``--seconds 5 --requests 5000``, load 3.4-4.0): workers' CPU at 1 / 16 /
  64 in flight 0.837 / 1.058 / 0.865 ms after, 0.748 / 1.190 / 1.038 ms base; per core by CPU time at 64
  0.34 x after (against its own run's ``Guard.run``, 0.294 ms) and 0.31 x base (0.323 ms): target 0.6 not
  met; p50/p99 after 0.83/7.99, 20.1/78.1, 59.5/106.5 ms; base 0.84/2.08, 19.6/46.6, 72.4/141.1 ms (wall
  figures, set by the load); open loop at half saturation p99 66 ms after, 42 ms base; memory +0.2% / +0.0%
  over 5,000 requests; no errors;
- in process, the server's layer without HTTP (the app called as ASGI at 64 in flight against
  ``AsyncGuard.run`` through the same semaphore) cost 0.15-0.28 ms a request before these changes, about
  twice the sum of its parts timed alone (JSON of the decision ~10 us, ``to_dict`` ~7, access line ~9,
  metrics ~20, each ``asyncio.timeout`` 6-10, query parse ~5): with 64 requests interleaved nothing stays
  in cache;
- tried, not kept: the 200's JSON written field by field from the decision (``json.encoder``'s C string
  escape per value): 28-42 us against 17-29 for ``to_dict`` plus the C encoder; measured and not worth doing:
  a cache of the API-key lookup by raw key (SHA-256 of a key is 0.7 us), a reused encoder without the
  circular check (saves ~1.5 us).

Measured (2026-12-08, PostgreSQL, 2 workers, 2 shared CPUs; base is main at eceb772, "after" branch serve17f;
other sessions kept the load average at 2.9-5.7 throughout, so only same-run ratios mean much):

- what changed: (1) on PostgreSQL ``AsyncRecordStore.aread_many`` sends the store's statements on psycopg's
  ``AsyncConnection`` itself, on a connection it keeps checked out between reads (at most ``pool_size``, each
  for 60 s at most, reused only when idle in the driver, used within ``PING_IDLE`` and its socket quiet; any
  other goes back through the pool, which pings it): the greenlet bridge, the pool's checkout and return and
  SQLAlchemy's cursor adapter cost ~0.09 ms of CPU a read against the driver's own ~0.07 ms (in process, 8
  in flight, interleaved: ``aread_many`` 0.20-0.30 -> 0.14-0.19 ms); PostgreSQL engines roll back on return
  only a connection that is not idle; (2) the payload's lone-surrogate check is one search over all its text,
  field by field only when it finds one (``load_payload`` 38.8 -> 28.2 us for the demo answer);
- paired (``serve_pair.py``, 64 in flight each, 5 s rounds): workers' CPU a request this/base 0.829
  (0.770-0.859, 6 rounds, (1) alone), 0.775 (0.692-0.838, 8 rounds) and 0.854 (0.760-0.905, 6 rounds);
  base medians 1.33 / 1.66 / 1.17 ms, after 1.06 / 1.25 / 0.95 ms;
- in process, interleaved runs of both trees (``Guard.run`` serial; ``AsyncGuard.run`` 1 / 8 in flight), CPU
  ms a run: base 0.36-0.51 / 0.61-0.71 / 0.54-0.68, after 0.38-0.41 / 0.33-0.46 / 0.35-0.63: ``AsyncGuard.run``
  now costs about what ``Guard.run`` does (its reads no longer check out of the pool at all);
- ``bench_serve.py`` base then after (``--seconds 5 --requests 5000``, load 3.3-4.1): workers' CPU at 1 / 16 /
  64 in flight 0.875 / 0.865 / 0.986 -> 0.609 / 0.654 / 0.702 ms; per core by CPU time 0.33 x -> 0.40 x each
  tree's own in-process ``Guard.run`` (0.322 and 0.281 ms a run; against base's, 0.46 x): target 0.6 not met;
  memory of the two workers +0.1% / +0.2% over 5,000 requests (in process, 64,000 runs of the branch's
  ``AsyncGuard.run``: resident set 125.0 -> 126.3 MiB, the same number of objects after each 8,000); no errors;
- tried, not kept: psycopg's ``prepare_threshold`` (never, always, default), positional parameters and binary
  results: the driver's CPU a statement within noise of the default (66-81 us).

Measured (2026-12-07, PostgreSQL, 2 workers, 2 shared CPUs; base is main at 7d04409, "after" branch serve17e;
other sessions' builds and test runs kept the load average at 1.1-4.3, and the workers' CPU a request moved from
0.7 to 1.8 ms with it within minutes, for base and branch alike):

- what changed: the workers' CPU per request, profiled by CPU time (``--profile`` now runs cProfile on the
  workers' thread CPU clock; the wall clock charged a send that wakes PostgreSQL or the client to the sender)
  and counted in system calls (``strace -c`` on both workers at 64 in flight): base 51.5 calls a request, 31.5
  of them ``getpid`` (prometheus_client checks the process id on every value it writes, ~24 a request) and
  2.96 ``write``; after 26.8, 9.0 ``getpid`` (CPython's asyncio checks it on each task step) and 1.02 ``write``.
  (1) ``Metrics(deferred=True)`` in the workers: counts held in the process and written to the multiprocess
  files each second and at shutdown (``/metrics`` flushes the answering worker first, so a scrape shows another
  worker's counts at most a second late); (2) uvicorn's httptools protocol with a response's head and body in
  one ``write`` (``guard.server.protocol``: one send and one wake-up of the client instead of two); (3) the
  access log's handler holds its lines and writes them in batches of 64 or each second and at shutdown
  (stdout writes through under ``PYTHONUNBUFFERED``: it was a ``write`` per request); (4) ``/v1/run``'s 200
  rendered as bytes with a shared JSON encoder, no response class; (5) each worker, once serving, freezes what
  start-up made (``gc.freeze``: about 140,000 objects every full collection walked, ~0.1 s a time) and raises
  the young-generation threshold from 700 to 7000: the collector's CPU in a worker over ~3,000 requests went
  from 0.44 s (442 young, 40 middle, 3 full collections) to 0.02 s besides the one collection at start-up;
- paired (``benchmarks/serve_pair.py``: both servers at once over the same seconds, 6 rounds of 5 s): workers'
  CPU a request this/base 0.813 (0.792-0.834) at 64 in flight each, base 0.978 ms (0.824-1.587), after 0.798 ms
  (0.663-1.303); with (1)-(4) alone, 32 in flight each, 0.957 (0.911-1.123); (5) alone against (1)-(4) (the
  freeze without the threshold) 0.937 (0.915-1.029);
- per core by CPU time: in-process ``Guard.run`` took 0.20-0.27 ms CPU a run in this session's runs; against the
  paired medians that is 0.21-0.28 x for base (0.978 ms) and 0.25-0.34 x after (0.798 ms), the same ratio at
  the same moment moving from 0.24 to 0.30 (target 0.6: not met; ``AsyncGuard.run`` alone is 0.34-0.46 ms, more
  than the 0.6 x target leaves for a whole request, ~0.4 ms);
- ``bench_serve.py`` itself, run base/after/base/after (``--seconds 5 --requests 5000``) at load 2.5-2.9, could
  not resolve the change: workers' CPU at 1 / 16 / 64 in flight base 0.892 / 1.578 / 1.113 and 0.717 / 0.743 /
  1.078 ms, after 0.809 / 1.098 / 1.202 and 0.821 / 1.017 / 1.208 ms; no errors; memory of the two workers over
  5,000 requests +0.1% / +0.2% base, +0.0% / +0.0% after (285.3-285.5 MiB);
- tried, not kept: py-spy (non-idle samples) put a third of the workers' time in ``send``: a runnable thread
  waiting for a core counts as busy, so on shared cores it measures the wait after waking another process.

Measured (2026-12-05, PostgreSQL, 2 workers, 2 shared CPUs; ``--seconds 5 --requests 5000``; base is main at
6134a3a, "after" this branch; three runs of main and two of the branch, interleaved, at load average 1.8-3.8 from
other work on the machine: the CPU figures hold under load, the wall rates do not):

- what changed: a payload's entity reads share one checked-out connection (``RecordStore.read_many``; the checker
  yields all its reads at once, so ``Guard`` reads them blocking and ``AsyncGuard`` awaits them); a pooled
  PostgreSQL connection is pinged at checkout only when it has been idle 5 s or its socket is not quiet (a
  ``poll``, no round trip), so a run of one entity is one round trip instead of two;
- in process: ``Guard.run`` 0.31-0.36 -> 0.27-0.28 ms CPU a run; ``AsyncGuard.run`` 0.49-0.53 -> 0.39-0.45 ms
  (five interleaved in-process runs each: 0.52-0.57 -> 0.37-0.47);
- workers' CPU a ``POST /v1/run`` at 1 / 16 / 64 in flight: before 0.88-1.17 / 1.02-1.40 / 1.05-1.18 ms; after
  0.86-0.93 / 1.08-1.14 / 1.04 ms;
- per core by CPU time (at 64 in flight): 849-955 -> 965 requests per worker CPU second = 0.27-0.31 x ->
  0.26-0.27 x in-process ``Guard.run``'s runs per CPU second (target 0.6: not met). The ratio did not move
  because the in-process baseline lost the same ping: both sides are about 0.03-0.1 ms cheaper (a run of the
  variant below, with the statements on the asyncio driver's own connection: 0.79 / 0.88 / 1.00 ms, 0.27 x);
- tried, not kept: sending the statements on the asyncio driver's own connection (psycopg's ``AsyncConnection``,
  aiomysql, aiosqlite; checkout and return still through SQLAlchemy's pool) instead of the greenlet bridge:
  ``AsyncGuard.run`` 0.42-0.46 ms against 0.37-0.47, no gain for two more code paths; no pool reset on return for
  PostgreSQL's autocommit connections: the same within noise (psycopg skips the rollback of an idle connection);
- what is left: the workers spend about 0.6 ms a request beyond ``AsyncGuard.run`` (uvicorn's protocol and its
  sends, guard's server layer, multiprocess metrics: 23 mmap writes a request, 0.06-0.08 ms measured in process
  with ``Guard.run``, JSON, the access log); the profiler here measures wall time, so a send that wakes
  PostgreSQL or the client on the same two CPUs shows as the sender's time;
- ``POST /v1/run`` at 1 / 16 / 64 in flight, wall: before 405-825 / 459-923 / 562-864 /s, after 554-590 /
  553-609 / 623-646 /s (the machine's load set these); no errors; open loop at half saturation p99 8-129 ms
  before, 10 ms after; memory of the two workers +0.1% over 5,000 requests (259.8-261.1 MiB), no errors.

Earlier (serve17c, same machine): the lean ``/v1/run`` layer took the framework's share of a profiled request from
10% to 2%; the shared JSON decoder saves about 6 us a payload; workers' CPU at 64 in flight 1.09-1.23 ->
0.91-0.95 ms then; memory 274.5 -> 274.6 MiB over 100,000 requests.

    .venv/bin/python benchmarks/bench_serve.py [--rows 20000] [--seconds 5] [--db URL] [--workers 2] [--requests 20000]
        [--profile DIR] [--coalesce N]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import uvloop
import yaml
from _common import rate
from loadclient import LoadClient, request_bytes

from guard import demo
from guard.pipeline import AsyncGuard, Guard
from guard.server.config import hash_key

KEY = "gk_bench_key"
CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}
ROOT = Path(__file__).resolve().parents[1]
Call = Callable[[], Awaitable[bool]]


def write_serve_config(tmp: Path, root: Path, url: str, port: int, coalesce: int | None = None) -> None:
    """``gate.yaml`` and ``serve.yaml`` in ``tmp``: the demo policy of the guard at ``root`` over ``url``, one
    bench key with no practical rate limit, no classifier; ``coalesce`` set when given (else the server's
    default; a tree older than the key has none)."""
    (tmp / "gate.yaml").write_text(yaml.safe_dump(CONFIG))
    orders: dict[str, Any] = {"policy": str(root / "guard/demo/policy.yaml"), "db": url, "domains": ["orders"]}
    if coalesce is not None:
        orders["coalesce"] = coalesce
    serve = {
        "port": port,
        "policies": {"orders": orders},
        "keys": {
            "bench": {
                "hash": hash_key(KEY),
                "policies": ["orders"],
                "domains": ["orders"],
                "allow_now": True,
                "rate": "1000000/second",
            }
        },
        "gate_config": "gate.yaml",
        "classifier": "none",
    }
    (tmp / "serve.yaml").write_text(yaml.safe_dump(serve))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quantiles(latencies: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    return q[49], q[98]


async def closed(call: Call, concurrency: int, seconds: float) -> tuple[float, float, float, int]:
    """Requests per second, p50 and p99 latency (ms) and errors with ``concurrency`` callers for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            ok = await call()
            latencies.append((time.perf_counter() - t0) * 1000)
            errors += not ok

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    return len(latencies) / elapsed, *quantiles(latencies), errors


async def opened(call: Call, per_second: float, seconds: float) -> tuple[float, float, float, int]:
    """Requests sent at ``per_second`` on a fixed schedule; latency from each one's due time (ms).

    Each request's task is made when it is due, by one loop that sleeps until the next: made all at once at the
    start (thousands of tasks, each to its first sleep), they held the client's loop for tens of milliseconds on
    a busy machine, and the first requests went out that late and together, a burst of the client's making that
    set about half of a 5 s run's slowest 1%."""
    latencies: list[float] = []
    errors = 0
    n = max(1, int(per_second * seconds))
    running: set[asyncio.Task[None]] = set()
    clock = time.perf_counter

    async def one(due: float) -> None:
        nonlocal errors
        ok = await call()
        latencies.append((clock() - due) * 1000)
        errors += not ok

    start = clock() + 0.05
    for i in range(n):
        due = start + i / per_second
        if due > clock():
            await asyncio.sleep(due - clock())
        task = asyncio.create_task(one(due))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)
    return n / (clock() - start), *quantiles(latencies), errors


def workers_of(pid: int) -> list[int]:
    """uvicorn's workers: the supervisor's children started by multiprocessing (not its resource tracker)."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "spawn_main" in line]


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of the processes so far (from /proc; clock ticks)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / ticks


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def cpu_pressure() -> str:
    """The share of the last 10 s in which some runnable task waited for a CPU (Linux's pressure stall figure):
    on shared cores the open-loop tail follows it more closely than the load average; empty where unavailable."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""
    return line.split()[1].replace("avg10=", "") + "%"


def load_avg() -> str:
    waits = cpu_pressure()
    return "load average {:.2f} {:.2f} {:.2f} on {} CPUs".format(*os.getloadavg(), os.cpu_count()) + (
        f", CPU pressure {waits} (some task waiting for a CPU, last 10 s)" if waits else ""
    )


def serial_gate(url: str, seconds: float) -> None:
    """A child of this benchmark (``--serial-gate``): serial ``Guard.run`` over ``url``; says ``ready`` once warm,
    measures for ``seconds`` from the line its parent then sends, and prints its rate and CPU a run as JSON."""
    gate = Guard(demo.policy(), url, domain="orders", config=CONFIG)
    payload = demo.payloads()["answer"]
    for _ in range(200):
        gate.run(payload, demo.PRINCIPAL, now=demo.NOW)
    print("ready", flush=True)
    sys.stdin.readline()
    n, cpu0, t0 = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        gate.run(payload, demo.PRINCIPAL, now=demo.NOW)
        n += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    gate.close()
    print(json.dumps({"rate": n / wall, "cpu_ms": cpu / n * 1000}), flush=True)


def _gate_child(url: str, seconds: float) -> subprocess.Popen[str]:
    """A :func:`serial_gate` child, once it is warm."""
    cmd = [sys.executable, __file__, "--db", url, "--serial-gate", str(seconds)]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        raise SystemExit("a Guard.run child did not start")
    return child


def _go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def _gate_result(child: subprocess.Popen[str]) -> dict[str, float]:
    out, _ = child.communicate(timeout=600)
    return json.loads(out.strip().splitlines()[-1])


def gates_at_once(url: str, n: int, seconds: float) -> list[dict[str, float]]:
    """Serial ``Guard.run`` in ``n`` processes over the same seconds: the in-process figure with as many cores busy
    running a gate as the server has workers."""
    children = [_gate_child(url, seconds) for _ in range(n)]
    for child in children:
        _go(child)
    return [_gate_result(child) for child in children]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--db", default=None, help="database URL (default: a temporary SQLite file)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--requests", type=int, default=20_000, help="requests between the two memory readings")
    ap.add_argument("--profile", type=Path, default=None, help="profile the workers, writing their stats here")
    ap.add_argument("--coalesce", type=int, default=None, help="policies.orders.coalesce (default: the server's)")
    ap.add_argument("--serial-gate", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serial_gate is not None:
        serial_gate(args.db, args.serial_gate)
        return
    print(f"start: {load_avg()}")
    tmp = Path(tempfile.mkdtemp())
    url = args.db or f"sqlite:///{tmp / 'records.db'}"
    demo.build(url, n_orders=args.rows, n_customers=max(1000, args.rows // 10))
    payload = demo.payloads()["answer"]

    gate = Guard(demo.policy(), url, domain="orders", config=CONFIG)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sync_rate = rate(lambda: gate.run(payload, demo.PRINCIPAL, now=demo.NOW), args.seconds)
    sync_cpu = (time.process_time() - cpu0) / (sync_rate * (time.perf_counter() - wall0)) * 1000
    gate.close()
    print(f"Guard.run in process (serial, one core)   {sync_rate:8.0f} /s  CPU {sync_cpu:.3f} ms a run")
    args.sync_cpu, args.url = sync_cpu, url
    together = gates_at_once(url, args.workers, args.seconds)
    args.busy_cpu = statistics.median(r["cpu_ms"] for r in together)
    each = ", ".join(f"{r['cpu_ms']:.3f}" for r in together)
    print(
        f"Guard.run in {args.workers} processes at once        {sum(r['rate'] for r in together):8.0f} /s  "
        f"CPU {args.busy_cpu:.3f} ms a run (median of {each})"
    )

    async def in_process() -> None:
        async with AsyncGuard(demo.policy(), url, domain="orders", config=CONFIG) as agate:

            async def call() -> bool:
                await agate.run(payload, demo.PRINCIPAL, now=demo.NOW)
                return True

            for c in (1, 16):
                cpu0 = time.process_time()
                rps, p50, p99, _ = await closed(call, c, args.seconds)
                ms = (time.process_time() - cpu0) / (rps * args.seconds) * 1000
                print(
                    f"AsyncGuard.run, {c:2d} in flight           {rps:8.0f} /s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
                    f"  CPU {ms:.3f} ms a run"
                )

    asyncio.run(in_process())

    port = free_port()
    write_serve_config(tmp, ROOT, url, port, args.coalesce)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        for old in args.profile.glob("worker-*.prof"):
            old.unlink()
        env["GUARD_SERVE_PROFILE"] = str(args.profile.resolve())
    cmd = [sys.executable, "-m", "guard", "serve", "--config", str(tmp / "serve.yaml"), "--workers", str(args.workers)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(base + "/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        uvloop.run(over_http(base, payload, sync_rate, args, proc.pid))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    if args.profile is not None:
        breakdown(sorted(args.profile.glob("worker-*.prof")))
    print(f"end: {load_avg()}")


PARTS = (  # (part, path fragments of the code whose own time it is), first match wins
    ("HTTP (uvicorn, h11/httptools, uvloop)", ("/uvicorn/", "/h11/", "/httptools/", "/uvloop/")),
    ("framework (Starlette, FastAPI routing/params)", ("/starlette/", "/fastapi/", "/anyio/")),
    ("validation (pydantic)", ("/pydantic/", "/pydantic_core/")),
    ("database (SQLAlchemy, psycopg, greenlet, store)", ("/sqlalchemy/", "/psycopg", "/greenlet", "guard/records/")),
    ("metrics (prometheus_client, guard metrics)", ("/prometheus_client/", "guard/observe/metrics")),
    ("server layer (guard.server: edge, auth, rate)", ("guard/server/",)),
    ("gate (guard: parse, lint, check, render)", ("/guard/", "/babel/", "/lark/", "/regex/")),
    ("logging", ("/logging/",)),
    ("JSON encode/decode", ("/json/",)),
    ("event loop (asyncio, selectors, sockets)", ("/asyncio/", "selectors.py", "/ssl.py", "/socket.py")),
)
IDLE = ("poll' of 'select.epoll", "select' of 'select.epoll", "<method 'poll'", "run_forever")


def _part(func: tuple[str, int, str], stats: dict, depth: int = 0) -> str:
    """The part a function's own time belongs to; a C function's is its heaviest caller's."""
    filename, _line, name = func
    if filename == "~":
        if "epoll" in name or name == "<method 'poll' of 'select.epoll' objects>":
            return "idle (waiting in epoll)"
        callers = stats[func][4]
        if callers and depth < 8:
            heaviest = max(callers, key=lambda c: callers[c][2])
            return _part(heaviest, stats, depth + 1)
        return "other"
    for part, fragments in PARTS:
        if any(f in filename for f in fragments):
            return part
    return "other"


def _profile_overhead(calls: int = 200_000) -> float:
    """Seconds of CPU the profiler (on the CPU clock, as the workers run it) adds to one call, measured here."""

    def nothing() -> None:
        pass

    def loop() -> None:
        for _ in range(calls):
            nothing()

    t0 = time.thread_time()
    loop()
    plain = time.thread_time() - t0
    profiler = cProfile.Profile(time.thread_time)
    t0 = time.thread_time()
    profiler.enable()
    loop()
    profiler.disable()
    return max(0.0, (time.thread_time() - t0 - plain) / calls)


def breakdown(files: list[Path]) -> None:
    """The workers' own CPU time per /v1/run request, by part, summed over their profiles; each function's time
    less the profiler's own cost of its calls (measured in this process, so approximate)."""
    if not files:
        print("no profiles were written")
        return
    st = pstats.Stats(*(str(f) for f in files))
    stats = st.stats  # type: ignore[attr-defined]
    requests = sum(v[1] for (fn, _l, name), v in stats.items() if name == "gate_for" and fn.endswith("server/app.py"))
    overhead = _profile_overhead()
    print(f"profiler's cost a call, taken off each function's own time: {overhead * 1e6:.2f} us")
    for func, (cc, nc, tt, ct, callers) in list(stats.items()):
        stats[func] = (cc, nc, max(0.0, tt - nc * overhead), ct, callers)
    parts: dict[str, float] = {}
    for func, (_cc, _nc, tt, _ct, _callers) in stats.items():
        part = _part(func, stats)
        parts[part] = parts.get(part, 0.0) + tt
    busy = sum(v for k, v in parts.items() if not k.startswith("idle"))
    print(f"profile of {len(files)} workers, {requests} /v1/run requests: CPU ms per request by part (own time)")
    for part, seconds in sorted(parts.items(), key=lambda kv: -kv[1]):
        if part.startswith("idle"):
            continue
        print(f"  {part:50s} {seconds / max(1, requests) * 1000:7.3f} ms  {seconds / busy * 100:5.1f}%")
    print(f"  {'total (profiled, so slower than unprofiled)':50s} {busy / max(1, requests) * 1000:7.3f} ms")
    top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:25]
    print("  heaviest functions (own ms per request):")
    for (fn, line, name), (_cc, nc, tt, _ct, _callers) in top:
        where = "/".join(fn.split("/")[-2:])
        print(f"    {tt / max(1, requests) * 1000:7.3f}  {nc / max(1, requests):6.1f} calls  {where}:{line} {name}")


async def over_http(base: str, payload: dict, sync_rate: float, args: argparse.Namespace, supervisor: int) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "X-Guard-Principal": demo.PRINCIPAL}
    params = {"policy": "orders", "now": demo.NOW.isoformat()}
    host, port = base.removeprefix("http://").rsplit(":", 1)
    body = json.dumps(payload).encode()
    client = LoadClient(host, int(port), request_bytes(host, int(port), "/v1/run", params, headers, body))
    w = args.workers
    call = client.call
    try:
        await closed(call, 4, 1.0)  # connections open, every worker warm
        peak = 0.0
        workers = workers_of(supervisor)
        for c in (1, 16, 64):
            cpu0, client0 = cpu_seconds(workers), time.process_time()
            rps, p50, p99, errors = await closed(call, c, args.seconds)
            n = rps * args.seconds
            server_ms = (cpu_seconds(workers) - cpu0) / n * 1000
            client_ms = (time.process_time() - client0) / n * 1000
            peak = max(peak, rps)
            print(
                f"POST /v1/run, {c:2d} in flight ({w} workers) {rps:8.0f} /s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
                f"errors {errors}  CPU a request: workers {server_ms:.3f} ms, client {client_ms:.3f} ms"
            )
        print(f"per core at saturation: {peak / w:.0f} /s = {peak / w / sync_rate:.2f} x in-process Guard.run")
        if server_ms:
            print(
                f"per core by CPU time (at 64 in flight): {1000 / server_ms:.0f} /s = "
                f"{args.sync_cpu / server_ms:.2f} x in-process Guard.run's CPU a run "
                "(what the workers would do with a core each to themselves)"
            )
            print(
                f"  the same against Guard.run in {w} processes at once (a core each busy with a gate, as the workers' "
                f"are at saturation): {args.busy_cpu / server_ms:.2f} x"
            )
            side = await asyncio.to_thread(_gate_child, args.url, args.seconds)
            cpu0 = cpu_seconds(workers)
            _go(side)
            rps, _p50, _p99, errors = await closed(call, 64, args.seconds)
            same_ms = (cpu_seconds(workers) - cpu0) / (rps * args.seconds) * 1000
            same = await asyncio.to_thread(_gate_result, side)
            print(
                f"  64 in flight with serial Guard.run in another process over the same seconds: workers "
                f"{same_ms:.3f} ms a request, Guard.run {same['cpu_ms']:.3f} ms a run: "
                f"{same['cpu_ms'] / same_ms:.2f} x (errors {errors})"
            )
        rps, p50, p99, errors = await opened(call, peak / 2, args.seconds)
        print(
            f"open loop at half saturation ({peak / 2:.0f} /s): p50 {p50:.2f} ms  p99 {p99:.2f} ms  errors {errors}"
            f"  (CPU pressure {cpu_pressure() or 'n/a'})"
        )
        pids = workers_of(supervisor)
        before = rss_mib(pids)
        samples = [before]
        sent, errors, t0 = 0, 0, time.perf_counter()
        step = max(64, args.requests // 10)
        while sent < args.requests:
            batch = min(64, args.requests - sent)
            errors += sum(not ok for ok in await asyncio.gather(*(call() for _ in range(batch))))
            sent += batch
            if sent % step < batch:
                samples.append(rss_mib(pids))
        now = workers_of(supervisor)
        if now != pids:
            print(f"the workers changed during the run ({pids} -> {now}): no memory comparison")
            return
        after = rss_mib(pids)
        print(
            f"memory of {len(pids)} workers: {before:.1f} MiB, {after:.1f} MiB after {sent} more requests "
            f"({(after / before - 1) * 100:+.1f}%; range {min(samples):.1f}-{max(samples):.1f} MiB over "
            f"{len(samples)} readings; {sent / (time.perf_counter() - t0):.0f} /s, errors {errors})"
        )
    finally:
        client.close()


if __name__ == "__main__":
    main()

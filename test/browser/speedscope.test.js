// speedscope.test.js — beamspy's speedscope JSON, Chrome trace, perf script
// and folded files, imported into the real speedscope app (1.25.0, the npm
// package's built app served on 127.0.0.1 and opened with #profileURL=).
//
// The inputs are real recordings of real Erlang code, made here through the
// Erlang API with formats => [speedscope, chrome, perf, folded] and a
// timeline: naive fib, lists:sort, a gen_server called by four client
// processes, and compile:file/2 of a module (its timeline quota is small on
// purpose, so it is truncated). Each file must import with speedscope's own
// "import" console timing, no alert, no error screen and no importer
// warning; the app's export (Ctrl+S) is then compared with what was written:
// one profile per recorded process (speedscope JSON), per thread with events
// (Chrome trace, perf), frames named like `lists:sort/1`, totals equal
// across formats (evented speedscope vs Chrome trace per process; perf
// vs folded per file). The Chrome traces also go through a static checker of
// Perfetto's import rules (negative ts, string or
// out-of-range pid/tid, X without dur, partial overlaps after Perfetto's
// sort), since no Perfetto build runs offline.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { test, run, assert, serve, newPage, ROOT } = require('./lib/harness');

const SPEEDSCOPE = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release');
const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-speedscope-test-'));
const SCHEMA = 'https://www.speedscope.app/file-format-schema.json';

const WORK_SRC = `-module(bs_trace_work).
-export([fib/1, sort/1, server_load/2, compile_it/1]).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

sort(N) -> length(lists:sort([(I * 7919) rem 100003 || I <- lists:seq(1, N)])).

%% A gen_server under load: Clients processes make Calls calls each.
server_load(Clients, Calls) ->
    {ok, S} = gen_server:start(bs_trace_srv, [], []),
    Parent = self(),
    Pids = [spawn_link(fun() ->
                               [gen_server:call(S, {work, I}) || I <- lists:seq(1, Calls)],
                               Parent ! {self(), done}
                       end) || _ <- lists:seq(1, Clients)],
    [receive {P, done} -> ok end || P <- Pids],
    gen_server:stop(S).

compile_it(Src) ->
    {ok, _, _, _} = compile:file(Src, [binary, return]),
    ok.
`;

const SRV_SRC = `-module(bs_trace_srv).
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

init([]) -> {ok, 0}.
handle_call({work, I}, _From, N) -> {reply, lists:sum(lists:seq(1, I rem 40)), N + 1}.
handle_cast(_, N) -> {noreply, N}.
`;

// name, target, timeline spans, a frame that must be in the imported profile.
// Recorded with raw times: the totals of perf and folded are compared, and
// compensated, the shortest calls round to no time in folded (no line) while
// perf keeps stacks of a few ns.
const WORKLOADS = [
  { name: 'fib', target: '{bs_trace_work, fib, [16]}', spans: 100000, frame: 'bs_trace_work:fib/1' },
  // sort/1, not lists:sort/1: that tail-calls its helpers at once, so its own line holds
  // a few ns that the tracer's compensation can leave at zero (and folded writes no line).
  { name: 'sort', target: '{bs_trace_work, sort, [1500]}', spans: 100000, frame: 'bs_trace_work:sort/1' },
  { name: 'server', target: '{bs_trace_work, server_load, [4, 40]}', spans: 100000, frame: 'bs_trace_srv:handle_call/3' },
  { name: 'compile', target: null, spans: 15000, frame: 'compile:file/2' },
];

// Records every workload in one VM; returns {name: {procs, labels, files}}.
function record() {
  fs.writeFileSync(path.join(WORK, 'bs_trace_work.erl'), WORK_SRC);
  fs.writeFileSync(path.join(WORK, 'bs_trace_srv.erl'), SRV_SRC);
  execFileSync('erlc', ['-o', WORK, path.join(WORK, 'bs_trace_work.erl'), path.join(WORK, 'bs_trace_srv.erl')]);
  const srvSrc = path.join(WORK, 'bs_trace_srv.erl');
  const calls = WORKLOADS.map((w) => {
    const target = w.target || `{bs_trace_work, compile_it, ["${srvSrc}"]}`;
    return `W("${w.name}", ${target}, ${w.spans})`;
  }).join(', ');
  const expr = `Base = "${WORK}",
    W = fun(Name, Target, Spans) ->
          Dir = filename:join(Base, Name),
          ok = filelib:ensure_path(Dir),
          {ok, #{files := Files, profile := #{processes := Procs}}} =
              beamspy:profile(Target, #{output => Dir, formats => [speedscope, chrome, perf, folded],
                                        timeline => Spans, quiet => true, compensate => false}),
          io:format("WORKLOAD ~s ~b~n", [Name, length(Procs)]),
          [io:format("LABEL ~s~n", [L]) || {L, _} <- Procs],
          [io:format("FILE ~s~n", [F]) || F <- Files]
        end,
    ${calls}, halt().`;
  const out = execFileSync('erl', ['-noshell', '-pa', path.join(ROOT, 'ebin'), '-pa', WORK, '-eval', expr],
    { cwd: WORK, encoding: 'utf8', timeout: 90000 });
  const result = {};
  let cur = null;
  for (const line of out.split('\n')) {
    const m = /^(WORKLOAD|LABEL|FILE) (.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'WORKLOAD') {
      const [name, n] = m[2].split(' ');
      cur = result[name] = { procs: Number(n), labels: [], files: {} };
    } else if (m[1] === 'LABEL') {
      cur.labels.push(m[2]);
    } else {
      const f = m[2];
      const kind = f.endsWith('.speedscope.json') ? 'speedscope' : f.endsWith('.trace.json') ? 'chrome'
        : f.endsWith('.perf.txt') ? 'perf' : 'folded';
      cur.files[kind] = f;
    }
  }
  return result;
}

// ---------------------------------------------------------------- static checks

// Perfetto's JSON importer (formats.md §7.2), simulated: what it would drop,
// coerce or spill to an overflow track.
function checkPerfettoRules(doc) {
  const problems = [];
  assert(doc && Array.isArray(doc.traceEvents), 'no traceEvents array');
  const byTid = new Map();
  doc.traceEvents.forEach((e, i) => {
    if (typeof e.ph !== 'string' || e.ph.length !== 1) problems.push(`event ${i}: ph`);
    for (const k of ['pid', 'tid']) {
      if (typeof e[k] !== 'number' || !Number.isInteger(e[k])) problems.push(`event ${i}: ${k} is not an integer (${JSON.stringify(e[k])})`);
      else if (e[k] < 0 || e[k] > 4294967295) problems.push(`event ${i}: ${k} outside uint32 (Perfetto makes it 0)`);
    }
    if (e.ph === 'M') return;
    if (typeof e.ts !== 'number' || !Number.isFinite(e.ts)) { problems.push(`event ${i}: ts`); return; }
    if (e.ts < 0) problems.push(`event ${i}: negative ts (dropped by Perfetto's sorter)`);
    if (e.ph !== 'X') { problems.push(`event ${i}: phase ${e.ph}`); return; }
    if (typeof e.dur !== 'number' || e.dur < 0) problems.push(`event ${i}: X without a valid dur`);
    if (e.args !== undefined) problems.push(`event ${i}: per-event args`);
    if (!byTid.has(e.tid)) byTid.set(e.tid, []);
    byTid.get(e.tid).push({ i, ts: Math.round(e.ts * 1000), dur: Math.round(e.dur * 1000), name: e.name });
  });
  // Sort by ts, then (a trace with X events) longer dur first, then file
  // order; a slice ending at or before a new one is closed; one that does not
  // fit in the open slice overlaps partially.
  for (const [tid, xs] of byTid) {
    xs.sort((a, b) => (a.ts - b.ts) || (b.dur - a.dur) || (a.i - b.i));
    const ends = [];
    for (const x of xs) {
      while (ends.length && ends[ends.length - 1] <= x.ts) ends.pop();
      if (ends.length && x.ts + x.dur > ends[ends.length - 1]) {
        problems.push(`tid ${tid}: '${x.name}' (event ${x.i}) partially overlaps its parent`);
        if (problems.length > 10) break;
      }
      ends.push(x.ts + x.dur);
    }
  }
  return { problems, threadsWithEvents: byTid.size };
}

function checkSpeedscopeFile(doc, wl) {
  assert(doc.$schema === SCHEMA, '$schema');
  assert(doc.profiles.length === wl.procs, `${doc.profiles.length} profiles for ${wl.procs} processes`);
  const names = new Set(doc.shared.frames.map((f) => f.name));
  assert(names.size === doc.shared.frames.length, 'a frame name appears twice');
  assert(names.has(wl.frame), `no frame ${wl.frame}`);
  for (const p of doc.profiles) {
    if (p.type !== 'evented') continue;
    let last = -Infinity;
    const stack = [];
    for (const e of p.events) {
      assert(e.at >= last, `${p.name}: at decreases`);
      last = e.at;
      if (e.type === 'O') stack.push(e.frame);
      else assert(stack.pop() === e.frame, `${p.name}: C does not close the frame on top`);
    }
    assert(stack.length === 0, `${p.name}: frames left open`);
  }
}

// ---------------------------------------------------------------- speedscope

let server = null;
async function importInto(file) {
  if (!server) server = await serve({ '/app/': SPEEDSCOPE, '/f/': WORK });
  const rel = path.relative(WORK, file);
  const page = await newPage();
  const log = [];
  const dialogs = [];
  page.on('console', (m) => log.push({ type: m.type(), text: m.text() }));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  const url = `${server.url}/f/${rel.split(path.sep).map(encodeURIComponent).join('/')}`;
  await page.goto(`${server.url}/app/index.html#profileURL=${encodeURIComponent(url)}`);
  const deadline = Date.now() + 60000;
  let outcome = 'timeout';
  while (Date.now() < deadline) {
    if (dialogs.length) { outcome = 'dialog'; break; }
    if (log.some((m) => /^Failed to load format/.test(m.text))) { outcome = 'failed'; break; }
    if (log.some((m) => /^import: [\d.]+ ?m?s/.test(m.text))) { outcome = 'imported'; break; }
    if (page.pageErrors.length) { outcome = 'page error'; break; }
    await page.waitForTimeout(100);
  }
  assert(outcome === 'imported', `${rel}: ${outcome} ${dialogs.join(' ')} ${page.pageErrors.join(' ')}`);
  await page.waitForTimeout(300);
  const warnings = log.filter((m) => m.type === 'warning' && !/GL Driver Message|GPU stall/.test(m.text));
  assert(warnings.length === 0, `${rel}: importer warnings: ${warnings.slice(0, 3).map((w) => w.text).join(' | ')}`);
  const errorScreen = await page.evaluate(() => document.body.innerText.includes('Something went wrong'));
  assert(!errorScreen, `${rel}: error screen`);
  assert(page.pageErrors.length === 0, `${rel}: page errors ${page.pageErrors}`);
  assert(page.outsideRequests.length === 0, `${rel}: outside requests ${page.outsideRequests}`);
  const importer = (log.find((m) => /^Importing (as|from) /.test(m.text)) || {}).text || '';
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.keyboard.press('Control+s')]);
  const exported = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  await page.context().close();
  return { importer, exported, ms: parseFloat(log.find((m) => /^import: /.test(m.text)).text.slice(8)) };
}

const frameNames = (exp) => new Set(exp.shared.frames.map((f) => f.name));
const totalOf = (p) => p.endValue - p.startValue;

// ---------------------------------------------------------------- tests

let REC = null;
const timings = [];

test('record fib, lists:sort, a gen_server under load and compile:file/2 through the Erlang API', async () => {
  REC = record();
  for (const w of WORKLOADS) {
    const r = REC[w.name];
    assert(r, `no recording for ${w.name}`);
    for (const k of ['speedscope', 'chrome', 'perf', 'folded']) assert(r.files[k] && fs.existsSync(r.files[k]), `${w.name}: no ${k} file`);
    assert(r.procs === r.labels.length && r.procs >= 1, `${w.name}: processes`);
  }
  assert(REC.server.procs >= 6, `gen_server load: ${REC.server.procs} processes (caller, server, 4 clients)`);
  assert(!Object.values(REC).some((r) => Object.values(r.files).some((f) => f.endsWith('.chrome.json'))), '*.chrome.json');
});

for (const w of WORKLOADS) {
  test(`${w.name}: speedscope JSON imports as one evented profile per process`, async () => {
    const r = REC[w.name];
    const doc = JSON.parse(fs.readFileSync(r.files.speedscope, 'utf8'));
    checkSpeedscopeFile(doc, { ...w, procs: r.procs });
    const evented = doc.profiles.filter((p) => p.type === 'evented');
    assert(evented.length >= 1, 'no evented profile although a timeline was recorded');
    const truncated = doc.profiles.some((p) => p.name.endsWith(' (timeline truncated)'));
    assert(truncated === (w.name === 'compile'), `timeline truncated: ${truncated}`);
    const { importer, exported, ms } = await importInto(r.files.speedscope);
    timings.push(`${w.name}.speedscope.json ${ms.toFixed(0)} ms`);
    assert(/speedscope json/i.test(importer), `importer: ${importer}`);
    assert(exported.profiles.length === r.procs, `${exported.profiles.length} imported profiles, ${r.procs} processes`);
    const labels = r.labels.slice().sort();
    const names = exported.profiles.map((p) => p.name.replace(/ \(timeline truncated\)$/, '')).sort();
    assert(JSON.stringify(names) === JSON.stringify(labels), `profile names ${names} vs ${labels}`);
    assert(frameNames(exported).has(w.frame), `no frame ${w.frame} after import`);
    // What speedscope imported weighs what we wrote.
    doc.profiles.forEach((p, i) => {
      const e = exported.profiles[i];
      const want = p.type === 'evented' ? totalOf(p) : p.weights.reduce((a, b) => a + b, 0);
      assert(Math.abs(totalOf(e) - want) <= 1e-6 * Math.max(1, want), `${p.name}: imported ${totalOf(e)} vs ${want}`);
    });
  });

  test(`${w.name}: Chrome trace passes Perfetto's rules and imports without warnings`, async () => {
    const r = REC[w.name];
    const doc = JSON.parse(fs.readFileSync(r.files.chrome, 'utf8'));
    const { problems, threadsWithEvents } = checkPerfettoRules(doc);
    assert(problems.length === 0, problems.slice(0, 5).join('; '));
    const { importer, exported, ms } = await importInto(r.files.chrome);
    timings.push(`${w.name}.trace.json ${ms.toFixed(0)} ms`);
    assert(/trace event/i.test(importer), `importer: ${importer}`);
    assert(exported.profiles.length === threadsWithEvents, `${exported.profiles.length} profiles, ${threadsWithEvents} threads with events`);
    assert(frameNames(exported).has(w.frame), `no frame ${w.frame} after import`);
    // Per process, the trace spans as long as the evented speedscope profile.
    const ss = JSON.parse(fs.readFileSync(r.files.speedscope, 'utf8'));
    const threadName = new Map(doc.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => [e.tid, e.args.name]));
    for (const e of exported.profiles) {
      const m = /, (.*) \(tid (\d+)\)$/.exec(e.name);
      assert(m && threadName.get(Number(m[2])) === m[1], `profile name ${e.name}`);
      const p = ss.profiles.find((q) => q.name.replace(/ \(timeline truncated\)$/, '') === m[1]);
      if (!p || p.type !== 'evented') continue;
      assert(Math.abs(totalOf(e) - totalOf(p)) < 0.01, `${m[1]}: Chrome ${totalOf(e)} µs vs speedscope ${totalOf(p)} µs`);
    }
  });

  test(`${w.name}: perf script and folded import with the same total`, async () => {
    const r = REC[w.name];
    const perf = await importInto(r.files.perf);
    timings.push(`${w.name}.perf.txt ${perf.ms.toFixed(0)} ms`);
    assert(/perf/i.test(perf.importer), `importer: ${perf.importer}`);
    const text = fs.readFileSync(r.files.perf, 'utf8');
    const tids = new Set(text.split('\n').filter((l) => l.startsWith('beam.smp ')).map((l) => l.split(' ')[1]));
    assert(perf.exported.profiles.length === tids.size, `${perf.exported.profiles.length} profiles, ${tids.size} threads`);
    assert(frameNames(perf.exported).has(w.frame), `no frame ${w.frame} after import`);
    const folded = await importInto(r.files.folded);
    timings.push(`${w.name}.folded ${folded.ms.toFixed(0)} ms`);
    assert(folded.exported.profiles.length === 1, 'folded: one profile');
    assert(frameNames(folded.exported).has(w.frame), `folded: no frame ${w.frame}`);
    // perf weighs seconds exactly; folded rounds each line to whole µs.
    const perfUs = perf.exported.profiles.reduce((a, p) => a + totalOf(p), 0) * 1e6;
    const foldedUs = totalOf(folded.exported.profiles[0]);
    const lines = fs.readFileSync(r.files.folded, 'utf8').split('\n').length;
    assert(Math.abs(perfUs - foldedUs) <= lines, `perf ${perfUs} µs vs folded ${foldedUs} µs`);
  });
}

test('report import timings', async () => {
  console.log(`# speedscope import (app's own timing): ${timings.join(', ')}`);
  if (!process.env.BS_KEEP) fs.rmSync(WORK, { recursive: true, force: true });
  else console.log(`# kept ${WORK}`);
});

run();
